package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/legacybridge/soapbridge/restbackend"
)

// replyOnly are the fields of restbackend's request types that only a reply
// carries (Payer and Recurrence serve both directions): the client never
// sends them and the sandbox refuses them in a request.
var replyOnly = map[string]bool{
	"payer.payment_card":          true,
	"payer.bank_account":          true,
	"recurrence.recurrence_state": true,
}

// wireBody is one JSON request body the sandbox reads: its mirror type, the
// restbackend type it converts to, and how the client sends one.
type wireBody struct {
	name   string
	mirror reflect.Type
	client reflect.Type
	// decode runs the sandbox's own decoding and conversion.
	decode func(body []byte, v *validator) (any, error)
	// send makes the client send req (a pointer to the client type); nil
	// when the client never sends this body.
	send func(c *restbackend.Client, req any) error
}

func bodyOf[In, Out any](name string, rest func(*In, *validator) Out, send func(*restbackend.Client, *Out) error) wireBody {
	b := wireBody{
		name:   name,
		mirror: reflect.TypeFor[In](),
		client: reflect.TypeFor[Out](),
		decode: func(body []byte, v *validator) (any, error) { return decodeAs(body, v, rest) },
	}
	if send != nil {
		b.send = func(c *restbackend.Client, req any) error { return send(c, req.(*Out)) }
	}
	return b
}

var wireCreds = restbackend.Credentials{ClientID: testID, ClientSecret: testSecret}

// wireBodies are all the JSON request bodies the sandbox reads.
var wireBodies = []wireBody{
	bodyOf("create payment", (*createIn).rest, func(c *restbackend.Client, r *restbackend.PaymentRequest) error {
		_, err := c.CreatePayment(context.Background(), wireCreds, r)
		return err
	}),
	bodyOf("create recurrence", (*recurrenceReqIn).rest, func(c *restbackend.Client, r *restbackend.RecurrenceRequest) error {
		_, err := c.CreateRecurrence(context.Background(), wireCreds, 3000000001, r)
		return err
	}),
	bodyOf("partial capture", (*captureIn).rest, func(c *restbackend.Client, r *restbackend.CaptureRequest) error {
		_, err := c.Capture(context.Background(), wireCreds, 3000000001, r)
		return err
	}),
	bodyOf[refundIn, restbackend.RefundRequest]("JSON refund", (*refundIn).rest, nil), // the client refunds with a form
	bodyOf("account statement", (*statementIn).rest, func(c *restbackend.Client, r *restbackend.StatementRequest) error {
		_, err := c.AccountStatement(context.Background(), wireCreds, r)
		return err
	}),
}

// TestWireTypesMatchClient holds the sandbox's lenient request types to
// restbackend's: for every body the sandbox reads, the JSON keys its mirror
// accepts are the keys the client's type sends (nested objects and lists
// included), and a request with every field set, as the client sends it,
// comes out of the sandbox's decoding and conversion equal: nothing the
// sandbox accepts is dropped, nothing the client sends is refused.
func TestWireTypesMatchClient(t *testing.T) {
	sent := recordClientBodies(t)
	for _, b := range wireBodies {
		t.Run(b.name, func(t *testing.T) {
			want := withoutReplyOnly(jsonKeys(b.client))
			assert.Equal(t, want, jsonKeys(b.mirror), "keys the sandbox accepts (left: restbackend's %s, right: the sandbox's %s)", b.client.Name(), b.mirror.Name())

			req := reflect.New(b.client)
			fill(req, "", replyOnly, new(int64))
			var raw []byte
			if b.send != nil {
				_ = b.send(sent.client, req.Interface()) // made-up values: refused or not, only the body matters
				raw = sent.body(t)
			} else {
				var err error
				raw, err = json.Marshal(req.Interface())
				require.NoError(t, err)
			}
			assert.Equal(t, want, rawKeys(t, raw), "every field set: the body carries every key of %s", b.client.Name())

			v := &validator{}
			got, err := b.decode(raw, v)
			require.NoError(t, err, "the sandbox decodes what the client sends: %s", raw)
			require.Empty(t, v.items, "the sandbox converts what the client sends: %s", raw)
			assert.Equal(t, req.Elem().Interface(), got, "the sandbox's conversion gives back what the client sent: %s", raw)
		})
	}
}

// TestPaymentReplyIsTheClients: the sandbox's payment reply is restbackend's
// Payment with one extension (eet_code) that shadows none of its fields.
func TestPaymentReplyIsTheClients(t *testing.T) {
	p := reflect.New(reflect.TypeFor[restbackend.Payment]())
	fill(p, "", nil, new(int64))
	b, err := json.Marshal(paymentReply{Payment: p.Interface().(*restbackend.Payment), EETCode: eetCodeOf(1)})
	require.NoError(t, err)
	var back restbackend.Payment
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, p.Elem().Interface(), back)
	assert.Equal(t, jsonKeys(reflect.TypeFor[restbackend.Payment]()), withoutPrefix(jsonKeys(reflect.TypeFor[paymentReply]()), "eet_code"))
}

// A test that sees drift must be able to fail: a mirror with a key the
// client lacks, one that drops a field, and one that misses a key.
func TestWireCheckSeesDrift(t *testing.T) {
	type eetExtra struct {
		eetIn
		Dan3 num `json:"dan3"`
	}
	assert.NotEqual(t, jsonKeys(reflect.TypeFor[restbackend.EET]()), jsonKeys(reflect.TypeFor[eetExtra]()))
	type statementShort struct {
		DateFrom string `json:"date_from"`
		DateTo   string `json:"date_to"`
		GoID     num    `json:"goid"`
		Currency string `json:"currency"`
	}
	assert.NotEqual(t, jsonKeys(reflect.TypeFor[restbackend.StatementRequest]()), jsonKeys(reflect.TypeFor[statementShort]()))
	dropMena := func(e *eetIn, _ *validator) restbackend.EET {
		return restbackend.EET{CelkTrzba: int64(e.CelkTrzba), ZaklDan1: int64(e.ZaklDan1), Dan1: int64(e.Dan1), ZaklDan2: int64(e.ZaklDan2), Dan2: int64(e.Dan2)}
	}
	full := reflect.New(reflect.TypeFor[restbackend.EET]())
	fill(full, "", nil, new(int64))
	raw, err := json.Marshal(full.Interface())
	require.NoError(t, err)
	got, err := decodeAs(raw, &validator{}, dropMena)
	require.NoError(t, err)
	assert.NotEqual(t, full.Elem().Interface(), got)
}

// clientBodies records the body of each request the client sends to a
// sandbox (which then answers it as usual).
type clientBodies struct {
	client *restbackend.Client
	mu     sync.Mutex
	last   []byte
}

func recordClientBodies(t *testing.T) *clientBodies {
	e := newEnv(t)
	rec := &clientBodies{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if !strings.HasSuffix(r.URL.Path, "/oauth2/token") {
			rec.mu.Lock()
			rec.last = b
			rec.mu.Unlock()
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		e.g.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	rec.client = restbackend.New(restbackend.Config{BaseURL: srv.URL, Timeout: time.Minute})
	return rec
}

// body returns the last body sent and forgets it.
func (c *clientBodies) body(t *testing.T) []byte {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.last
	c.last = nil
	require.NotEmpty(t, b, "the client sent no body")
	return b
}

var unmarshaler = reflect.TypeFor[json.Unmarshaler]()

// jsonKeys lists the JSON keys a struct type reads or writes, as paths
// ("payer.contact.email", "items[].ean"); a type with its own
// UnmarshalJSON (num, text, boolText) is one value.
func jsonKeys(t reflect.Type) []string {
	set := map[string]bool{}
	walkKeys(t, "", set)
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func walkKeys(t reflect.Type, path string, into map[string]bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.Kind() == reflect.Slice:
		walkKeys(t.Elem(), path+"[]", into)
	case t.Kind() != reflect.Struct, reflect.PointerTo(t).Implements(unmarshaler):
	default:
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			switch {
			case name == "-", !f.IsExported() && !f.Anonymous:
				continue
			case f.Anonymous && name == "":
				walkKeys(f.Type, path, into)
				continue
			case name == "":
				name = f.Name
			}
			p := name
			if path != "" {
				p = path + "." + name
			}
			into[p] = true
			walkKeys(f.Type, p, into)
		}
	}
}

// rawKeys lists the keys of a JSON document as jsonKeys does.
func rawKeys(t *testing.T, raw []byte) []string {
	t.Helper()
	var doc any
	require.NoError(t, json.Unmarshal(raw, &doc))
	set := map[string]bool{}
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch v := v.(type) {
		case []any:
			for _, e := range v {
				walk(e, path+"[]")
			}
		case map[string]any:
			for k, e := range v {
				p := k
				if path != "" {
					p = path + "." + k
				}
				set[p] = true
				walk(e, p)
			}
		}
	}
	walk(doc, "")
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func withoutReplyOnly(keys []string) []string {
	var out []string
	for _, k := range keys {
		if !replyOnly[k] && !underReplyOnly(k) {
			out = append(out, k)
		}
	}
	return out
}

func underReplyOnly(k string) bool {
	for p := range replyOnly {
		if strings.HasPrefix(k, p+".") {
			return true
		}
	}
	return false
}

func withoutPrefix(keys []string, prefix string) []string {
	var out []string
	for _, k := range keys {
		if k != prefix && !strings.HasPrefix(k, prefix+".") {
			out = append(out, k)
		}
	}
	return out
}

// fill sets every field under v (a pointer) to a distinct non-zero value,
// lists and maps to two elements, except the fields (paths) in skip.
func fill(v reflect.Value, path string, skip map[string]bool, n *int64) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		fill(v.Elem(), path, skip, n)
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			p := name
			if path != "" {
				p = path + "." + name
			}
			if skip[p] {
				continue
			}
			fill(v.Field(i), p, skip, n)
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fill(v.Index(i), path+"[]", skip, n)
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		for range 2 {
			k := reflect.New(v.Type().Key()).Elem()
			e := reflect.New(v.Type().Elem()).Elem()
			fill(k, path, skip, n)
			fill(e, path, skip, n)
			v.SetMapIndex(k, e)
		}
	case reflect.String:
		*n++
		v.SetString(fmt.Sprintf("v%d", *n))
	case reflect.Int, reflect.Int64, reflect.Int32:
		*n++
		v.SetInt(*n)
	case reflect.Bool:
		v.SetBool(true)
	default:
		panic("fill: no value for " + v.Type().String() + " at " + path)
	}
}
