package restbackend

// NewPooledHTTPClient lets the benchmark give the pooled client a test CA.
var NewPooledHTTPClient = newPooledHTTPClient
