// Package operations is the legacy EPaymentServiceV2 protocol: it takes the
// decoded SOAP calls of the twelve legacy operations, checks their
// signatures, performs them through the REST gateway and builds the legacy
// replies (signed the way legacy clients verify them). It knows neither XML
// syntax (package soapenc) nor the HTTP details of the gateway (package
// restbackend).
package operations

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/legacybridge/soapbridge/restbackend"
	"github.com/legacybridge/soapbridge/soapenc"
	"github.com/legacybridge/soapbridge/store"
)

// Namespaces of the legacy interface.
const (
	// NSInput is the body namespace legacy clients send requests in.
	NSInput = "http://axis.web.gopay.cz"
	// NSProvider holds ECustomerData, EPaymentCommand, EPaymentStatus, ...
	NSProvider = "urn:AxisEPaymentProvider"
	// NSGate holds EPaymentResult, ERecurrenceRequest, ERefundRequest.
	NSGate = "http://gate.gopay.cz/ws"
	// DefaultServiceNamespace is the output body namespace and the namespace
	// of ArrayOf_tns1_EPaymentMethod unless configured otherwise.
	DefaultServiceNamespace = "https://testgw.gopay.cz/axis/EPaymentServiceV2"
)

// TouchReply is what touch answers.
const TouchReply = "OK"

// Config configures a Service.
type Config struct {
	Merchants []Merchant
	// DefaultGoID is the merchant paymentMethodList (which has no input)
	// answers for; 0 means the first merchant.
	DefaultGoID int64
	Gateway     *restbackend.Client
	Store       store.Store
	Logger      *zap.Logger
	// PublicURL is the bridge's absolute public base URL; the gateway's
	// return and notification callbacks point under it.
	PublicURL string
	// ServiceNamespace is the output body namespace; DefaultServiceNamespace
	// when empty.
	ServiceNamespace string
	// Limits bound the requests SOAPHandler reads; soapenc.DefaultLimits()
	// when zero.
	Limits soapenc.Limits
}

// Service serves the legacy operations.
type Service struct {
	merchants   map[int64]Merchant
	defaultGoID int64
	gw          *restbackend.Client
	store       store.Store
	log         *zap.Logger
	publicURL   string
	ns          string
	limits      soapenc.Limits
	ops         map[string]operation

	methods methodCache
	now     func() time.Time
}

// operation handles one decoded call.
type operation func(ctx context.Context, call *soapenc.Call) (*soapenc.Value, error)

// New validates cfg and returns a Service. Error messages name the faulty
// setting but never contain secrets.
func New(cfg Config) (*Service, error) {
	if len(cfg.Merchants) == 0 {
		return nil, errors.New("operations: no merchant configured")
	}
	s := &Service{
		merchants: make(map[int64]Merchant, len(cfg.Merchants)),
		gw:        cfg.Gateway,
		store:     cfg.Store,
		log:       cfg.Logger,
		ns:        cfg.ServiceNamespace,
		limits:    cfg.Limits,
		now:       time.Now,
	}
	for i, m := range cfg.Merchants {
		m.Normalize()
		if err := m.Validate(); err != nil {
			return nil, fmt.Errorf("operations: merchant #%d: %w", i+1, err)
		}
		if _, dup := s.merchants[m.GoID]; dup {
			return nil, fmt.Errorf("operations: merchant #%d: goid %d configured twice", i+1, m.GoID)
		}
		s.merchants[m.GoID] = m
	}
	s.defaultGoID = cfg.DefaultGoID
	if s.defaultGoID == 0 {
		s.defaultGoID = cfg.Merchants[0].GoID
	} else if _, ok := s.merchants[s.defaultGoID]; !ok {
		return nil, fmt.Errorf("operations: default goid %d is not a configured merchant", s.defaultGoID)
	}
	if s.gw == nil {
		return nil, errors.New("operations: no gateway client")
	}
	if s.store == nil {
		return nil, errors.New("operations: no store")
	}
	u, err := url.Parse(cfg.PublicURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("operations: public URL %q must be an absolute http(s) URL without query", cfg.PublicURL)
	}
	s.publicURL = strings.TrimSuffix(cfg.PublicURL, "/")
	if s.log == nil {
		s.log = zap.NewNop()
	}
	if s.ns == "" {
		s.ns = DefaultServiceNamespace
	}
	if s.limits == (soapenc.Limits{}) {
		s.limits = soapenc.DefaultLimits()
	}
	s.ops = map[string]operation{
		"touch":                  s.touch,
		"paymentStatus":          s.paymentStatus,
		"paymentStatusWCust":     s.paymentStatusWCust,
		"createPayment":          s.createPayment,
		"capturePayment":         s.capturePayment,
		"voidAuthorization":      s.voidAuthorization,
		"refundPayment":          s.refundPayment,
		"partiallyRefundPayment": s.partiallyRefundPayment,
		"voidRecurrentPayment":   s.voidRecurrentPayment,
		"createRecurrentPayment": s.createRecurrentPayment,
		"createBuyer":            s.createBuyer,
		"paymentMethodList":      s.paymentMethodList,
	}
	return s, nil
}

// OperationNames lists the operations served, sorted.
func (s *Service) OperationNames() []string {
	names := make([]string, 0, len(s.ops))
	for n := range s.ops {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Merchant returns the configured merchant of goid.
func (s *Service) Merchant(goid int64) (Merchant, bool) {
	m, ok := s.merchants[goid]
	return m, ok
}

// Invoke performs one decoded call. The operation is chosen by the RPC
// element's local name; its namespace is expected to be NSInput but any is
// accepted (clients of that era were lax). A returned error is always a
// *soapenc.Fault.
func (s *Service) Invoke(ctx context.Context, call *soapenc.Call) (*soapenc.Response, error) {
	if call == nil {
		return nil, clientFault("empty request")
	}
	name := call.Operation.Local
	op, ok := s.ops[name]
	if !ok {
		return nil, clientFault("unknown operation " + soapenc.QuoteName(name) + " (namespace " + soapenc.QuoteName(call.Operation.Space) + ")")
	}
	if call.Operation.Space != NSInput {
		s.logFor(ctx).Debug("operation in unexpected namespace", zap.String("op", name), zap.String("ns", call.Operation.Space))
	}
	ret, err := op(ctx, call)
	if err != nil {
		var f *soapenc.Fault
		if errors.As(err, &f) {
			return nil, f
		}
		s.logFor(ctx).Error("operation failed", zap.String("op", name), zap.Error(err))
		return nil, serverFault("internal error")
	}
	return &soapenc.Response{Namespace: s.ns, Operation: name, Return: ret}, nil
}

func clientFault(msg string) *soapenc.Fault {
	return &soapenc.Fault{Code: "Client", String: msg}
}

func serverFault(msg string) *soapenc.Fault {
	return &soapenc.Fault{Code: "Server", String: msg}
}

// touch answers a liveness string; it does not call the gateway.
func (s *Service) touch(ctx context.Context, call *soapenc.Call) (*soapenc.Value, error) {
	r := TouchReply
	return soapenc.NewString("touchReturn", &r), nil
}
