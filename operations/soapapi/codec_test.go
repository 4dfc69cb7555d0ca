package soapapi

import (
	"reflect"
	"sort"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/operations"
	"github.com/legacybridge/soapbridge/soapenc"
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

// TestEncodeWithPooledValues: a reply encoded into pooled room is the reply
// encoded into new memory, one after another on the same replyValues
// (released in between, as the handler does), for a struct reply, a
// string, and an array longer than the room (allocated as before).
func TestEncodeWithPooledValues(t *testing.T) {
	s, n, yes := "x", int64(1234567), true
	status := &operations.PaymentStatus{Currency: &s, OrderNumber: &s, PaymentSessionID: &n, ProductName: &s,
		Result: "CALL_COMPLETED", SessionState: &s, TargetGoID: &n, TotalPrice: &n, EncryptedSignature: &s, PreAuthorization: &yes}
	methods := make([]operations.PaymentMethod, replyPoolValues+3)
	for i := range methods {
		methods[i] = operations.PaymentMethod{Code: "c" + strconv.Itoa(i), Description: "d", Logo: "l"}
	}
	c := codec{ns: "urn:x"}
	cases := []struct {
		name, typ string
		v         any
	}{
		{"paymentStatusReturn", "tns1:EPaymentStatus", status},
		{"touchReturn", "soapenc:string", "OK"},
		{"paymentMethodListReturn", "impl:ArrayOf_tns1_EPaymentMethod", methods},
		{"paymentStatusReturn", "tns1:EPaymentStatus", status},
	}
	rv := replyPool.Get().(*replyValues)
	for _, tc := range cases {
		want := c.encode(tc.name, tc.typ, reflect.ValueOf(tc.v))
		got := c.encodeWith(rv, tc.name, tc.typ, reflect.ValueOf(tc.v))
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: pooled %+v, new %+v", tc.name, got, want)
		}
		rv.release()
		if len(rv.vals) != 0 || len(rv.ptrs) != 0 || rv.resp != (soapenc.Response{}) {
			t.Fatalf("%s: released room not empty", tc.name)
		}
		rv = replyPool.Get().(*replyValues)
	}
}
