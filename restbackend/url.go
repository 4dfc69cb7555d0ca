package restbackend

import (
	"errors"
	"net/url"
)

// IsHTTPURL reports whether s is an absolute http(s) URL with a host: the
// least the gateway takes for a return or notification URL.
func IsHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// CheckURL is the check of a configured URL (the gateway's, the bridge's
// public one, a shop's notification URL, …): an absolute http(s) URL with
// a host and no user info or fragment, with a query only when withQuery.
// The message never quotes s: a URL may carry credentials.
func CheckURL(s string, withQuery bool) error {
	if !IsHTTPURL(s) {
		return errors.New("not an absolute http(s) URL")
	}
	if u, _ := url.Parse(s); u.User != nil || u.Fragment != "" || (u.RawQuery != "" && !withQuery) {
		if withQuery {
			return errors.New("must not carry user info or a fragment")
		}
		return errors.New("must not carry user info, a fragment or a query")
	}
	return nil
}
