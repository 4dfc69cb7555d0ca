package soapapi

import (
	"errors"
	"html/template"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/legacybridge/soapbridge/wsdl"
)

// WSDLHandler serves GET {soap path}: the WSDL when the query has a "wsdl" key
// (any letter case, with or without a value), else a short HTML page naming
// the service and its WSDL. The soap:address is publicURL+soapPath, or is
// derived from the request when publicURL is empty (see Address).
func WSDLHandler(d *wsdl.Doc, publicURL, soapPath string, serviceName string) echo.HandlerFunc {
	if serviceName == "" {
		serviceName = wsdl.ServiceName
	}
	return func(c echo.Context) error {
		if wsdl.WantsEncodingSchema(c.Request()) { // imported by the WSDL
			return c.Blob(http.StatusOK, "text/xml; charset=utf-8", wsdl.EncodingSchema())
		}
		addr, err := Address(c.Request(), publicURL, soapPath)
		if err != nil {
			return echo.NewHTTPError(http.StatusBadRequest, err.Error())
		}
		if WantsWSDL(c.Request()) {
			return c.Blob(http.StatusOK, "text/xml; charset=utf-8", d.Bytes(addr))
		}
		var b strings.Builder
		if err := page.Execute(&b, pageData{Service: serviceName, WSDL: addr + "?wsdl", Operations: wsdl.OperationNames()}); err != nil {
			return err
		}
		return c.HTML(http.StatusOK, b.String())
	}
}

// WantsWSDL reports whether the query of r asks for the WSDL (?wsdl, ?WSDL,
// ?wsdl=, ...).
func WantsWSDL(r *http.Request) bool {
	for k := range r.URL.Query() {
		if strings.EqualFold(k, "wsdl") {
			return true
		}
	}
	return false
}

// Address returns the SOAP endpoint's public address: publicURL+soapPath
// when publicURL is set, else scheme://host+soapPath from the request, where
// the scheme is X-Forwarded-Proto (http or https), or https under TLS, and
// the host is the first X-Forwarded-Host, or the Host header. A host that
// is not a plain host name or IP address (with an optional port) is an
// error: it would otherwise end up in every stub generated from the WSDL.
func Address(r *http.Request, publicURL, soapPath string) (string, error) {
	if publicURL != "" {
		return strings.TrimRight(publicURL, "/") + soapPath, nil
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if p := strings.ToLower(firstValue(r.Header.Get("X-Forwarded-Proto"))); p == "http" || p == "https" {
		scheme = p
	}
	host := firstValue(r.Header.Get("X-Forwarded-Host"))
	if host == "" {
		host = r.Host
	}
	if err := checkHost(host); err != nil {
		return "", err
	}
	return scheme + "://" + host + soapPath, nil
}

func firstValue(h string) string {
	first, _, _ := strings.Cut(h, ",")
	return strings.TrimSpace(first)
}

var errHost = errors.New("invalid Host header: configure the public URL or send a plain host[:port]")

// checkHost accepts name[:port], IPv4[:port] and [IPv6][:port].
func checkHost(hostport string) error {
	if hostport == "" || len(hostport) > 262 {
		return errHost
	}
	host, port := hostport, ""
	if strings.HasPrefix(hostport, "[") || strings.Count(hostport, ":") == 1 {
		h, p, err := net.SplitHostPort(hostport)
		if err != nil {
			if strings.HasPrefix(hostport, "[") && strings.HasSuffix(hostport, "]") {
				h, p, err = hostport[1:len(hostport)-1], "", nil
			} else {
				return errHost
			}
		}
		host, port = h, p
		if strings.HasPrefix(hostport, "[") {
			if a, err := netip.ParseAddr(host); err != nil || !a.Is6() {
				return errHost
			}
			return checkPort(port, hostport)
		}
	}
	if err := checkPort(port, hostport); err != nil {
		return err
	}
	if len(host) > 253 {
		return errHost
	}
	for _, label := range strings.Split(strings.TrimSuffix(host, "."), ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return errHost
		}
		for _, c := range []byte(label) {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return errHost
			}
		}
	}
	return nil
}

func checkPort(port, hostport string) error {
	if port == "" {
		if strings.HasSuffix(hostport, ":") {
			return errHost
		}
		return nil
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 || len(port) > 5 || port[0] == '+' {
		return errHost
	}
	return nil
}

type pageData struct {
	Service    string
	WSDL       string
	Operations []string
}

var page = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>{{.Service}}</title></head>
<body>
<h1>{{.Service}}</h1>
<p>SOAP 1.1 (rpc/encoded) endpoint. Service description: <a href="{{.WSDL}}">{{.WSDL}}</a></p>
<h2>Operations</h2>
<ul>
{{range .Operations}}<li>{{.}}</li>
{{end}}</ul>
</body>
</html>
`))
