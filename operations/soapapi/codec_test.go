package soapapi

import (
	"reflect"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/wsdl"
)

// notOnTheWire is the reviewed list of core-type fields that no legacy
// member carries: the first problem the adapter met reading a request.
var notOnTheWire = []string{
	"BuyerCreate.Invalid",
	"PaymentCommand.Invalid",
	"RecurrenceRequest.Invalid",
	"RefundRequest.Invalid",
	"SessionInfo.Invalid",
}

// TestCoreTypesMatchWSDLTable: every structure of the WSDL table has a core
// type with exactly its members, and a core field outside the table is on
// the reviewed list. Adding a member on one side only fails here.
func TestCoreTypesMatchWSDLTable(t *testing.T) {
	require.NoError(t, checkTypes())
	var untagged []string
	seen := map[reflect.Type]bool{}
	for _, gt := range goTypes {
		if !seen[gt] {
			seen[gt] = true
			untagged = append(untagged, untaggedFields(gt)...)
		}
	}
	sort.Strings(untagged)
	assert.Equal(t, notOnTheWire, untagged, "fields not on the wire (review, then update the list)")
}

// The check itself must catch a member missing on either side.
func TestCheckBindingCatchesDrift(t *testing.T) {
	table := wsdl.Type{Prefix: "tns1", Name: "EThing", Fields: []wsdl.Field{
		{Name: "code", Type: "soapenc:string"}, {Name: "amount", Type: "soapenc:long"},
	}}
	type exact struct {
		Code   string `legacy:"code"`
		Amount *int64 `legacy:"amount"`
	}
	type extraGo struct {
		Code   string `legacy:"code"`
		Amount *int64 `legacy:"amount"`
		Note   string `legacy:"note"`
	}
	type missingGo struct {
		Code string `legacy:"code"`
	}
	type wrongKind struct {
		Code   string `legacy:"code"`
		Amount *bool  `legacy:"amount"`
	}
	assert.NoError(t, checkBinding(table, reflect.TypeFor[exact]()))
	assert.ErrorContains(t, checkBinding(table, reflect.TypeFor[extraGo]()), `legacy:"note"`)
	assert.ErrorContains(t, checkBinding(table, reflect.TypeFor[missingGo]()), "EThing.amount")
	assert.ErrorContains(t, checkBinding(table, reflect.TypeFor[wrongKind]()), "int64")
}

// Every operation of the WSDL table is bound to a core method whose request
// type is its part's type.
func TestEveryOperationBound(t *testing.T) {
	a := unitAPI(t, unitConfig(t))
	n := 0
	for _, bs := range a.ops {
		n += len(bs)
	}
	assert.Equal(t, len(wsdl.Operations), n)
}

// untaggedFields lists the fields of t without a legacy or legacyExtra tag
// (embedded structs are walked, not listed).
func untaggedFields(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			out = append(out, untaggedFields(f.Type)...)
			continue
		}
		_, wire := f.Tag.Lookup("legacy")
		_, extra := f.Tag.Lookup("legacyExtra")
		if !wire && !extra {
			out = append(out, t.Name()+"."+f.Name)
		}
	}
	return out
}
