package soapenc

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWireFacts: how each client wrote its request, as the usage record's
// client recognition reads it (operations/soapapi.ClientOf).
func TestWireFacts(t *testing.T) {
	read := func(path string) Wire {
		body, err := os.ReadFile(path)
		require.NoError(t, err)
		c, err := Decode(body, "text/xml; charset=utf-8", DefaultLimits())
		require.NoError(t, err)
		return c.Wire
	}
	assert.Equal(t, Wire{EnvelopePrefix: "SOAP-ENV", BodyPrefix: "SOAP-ENV", OperationPrefix: "ns1",
		EncodingStyleOn: EncodingOnEnvelope, Typed: true},
		read(filepath.Join(testdataDir, "captures", "php-soapclient", "createPayment.xml")))
	assert.Equal(t, Wire{EnvelopePrefix: "soapenv", BodyPrefix: "soapenv", OperationPrefix: "ns1",
		EncodingStyleOn: EncodingOnCall, MultiRef: true, Typed: true},
		read(filepath.Join(testdataDir, "captures", "axis-1.4", "createPayment.xml")))
	assert.Equal(t, Wire{EnvelopePrefix: "soapenv", BodyPrefix: "soapenv", OperationPrefix: "ns1",
		EncodingStyleOn: EncodingOnCall},
		read(filepath.Join(testdataDir, "captures", "axis-1.4", "touch.xml")), "no part: neither typed nor multiRef")
	assert.Equal(t, Wire{EnvelopePrefix: "soap", BodyPrefix: "soap", OperationPrefix: "q1",
		EncodingStyleOn: EncodingOnBody, TypedRef: true, Typed: true},
		read(filepath.Join("..", "testdata", "clients", "variants", "dotnet-refundPayment-refundRequest.xml")))

	// suds: an empty Header, the Body under a second prefix; zeep: untyped.
	c, err := Decode([]byte(`<?xml version="1.0" encoding="UTF-8"?><SOAP-ENV:Envelope xmlns:SOAP-ENV="http://schemas.xmlsoap.org/soap/envelope/" xmlns:ns3="http://schemas.xmlsoap.org/soap/envelope/" xmlns:ns1="http://axis.web.gopay.cz" SOAP-ENV:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/"><SOAP-ENV:Header/><ns3:Body><ns1:touch/></ns3:Body></SOAP-ENV:Envelope>`), "", DefaultLimits())
	require.NoError(t, err)
	assert.Equal(t, Wire{EnvelopePrefix: "SOAP-ENV", BodyPrefix: "ns3", OperationPrefix: "ns1", EncodingStyleOn: EncodingOnEnvelope, Header: true}, c.Wire)
	c, err = Decode([]byte(`<soap-env:Envelope xmlns:soap-env="http://schemas.xmlsoap.org/soap/envelope/"><soap-env:Body><ns0:paymentStatus xmlns:ns0="http://axis.web.gopay.cz"><paymentSessionInfo><paymentSessionId>1</paymentSessionId></paymentSessionInfo></ns0:paymentStatus></soap-env:Body></soap-env:Envelope>`), "", DefaultLimits())
	require.NoError(t, err)
	assert.Equal(t, Wire{EnvelopePrefix: "soap-env", BodyPrefix: "soap-env", OperationPrefix: "ns0"}, c.Wire)
}
