package operations

import (
	"crypto/sha1"
	"reflect"

	"github.com/legacybridge/soapbridge/restbackend"
)

// Values of the legacy result fields.
const (
	CallCompleted = "CALL_COMPLETED" // EPaymentStatus.result
	callFailed    = "CALL_FAILED"
	Finished      = "FINISHED" // EPaymentResult.result, EBuyerCreateResult.result
	accepted      = "ACCEPTED"
	Failed        = "FAILED"
)

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// SignatureFields are the paymentStatus signature fields over the values
// exactly as the reply carries them.
func (st *PaymentStatus) SignatureFields() []string {
	return signedValues("EPaymentStatus", reflect.ValueOf(st).Elem(), true)
}

// statusSum is the SHA-1 of st's signature fields joined with key, as
// joinedSum(key, st.SignatureFields()) is, joined in a stack buffer when it
// fits (the usual replies do) without a string per field.
func statusSum(st *PaymentStatus, key string) [sha1.Size]byte {
	var buf [512]byte
	b := appendSignedJoin(buf[:0], "EPaymentStatus", reflect.ValueOf(st).Elem(), true)
	return sha1.Sum(append(b, key...))
}

// withCustomer extends st by the payer's data of p (paymentStatusWCust).
func withCustomer(st *PaymentStatus, p *restbackend.Payment) *PaymentStatusWCust {
	w := &PaymentStatusWCust{PaymentStatus: *st}
	if p == nil || p.Payer == nil {
		return w
	}
	if c := p.Payer.Contact; c != nil {
		w.CustomerData = &CustomerData{City: c.City, CountryCode: c.CountryCode, Email: c.Email, FirstName: c.FirstName,
			LastName: c.LastName, PhoneNumber: c.PhoneNumber, PostalCode: c.PostalCode, Street: c.Street}
	}
	if c := p.Payer.PaymentCard; c != nil {
		w.CustomerCardData = &CardData{CardNumber: c.CardNumber, CardExpiration: c.CardExpiration, CardBrand: c.CardBrand,
			CardIssuerCountry: c.CardIssuerCountry, CardIssuerBank: c.CardIssuerBank}
		w.PaymentInstCountryCode = opt(c.CardIssuerCountry)
	}
	return w
}

// opt turns an empty string into absent.
func opt(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func optInt(n int64) *int64 {
	if n == 0 {
		return nil
	}
	return &n
}

func ptr[T any](v T) *T { return &v }

// sign sets the paymentResult signature with secureKey.
func (r *PaymentResult) sign(secureKey string) error {
	sig, err := Sign(secureKey, PaymentResultFields(formatOptInt(r.PaymentSessionID), r.Result)...)
	if err != nil {
		return err
	}
	r.EncryptedSignature = &sig
	return nil
}
