package main

import (
	"crypto/tls"
	"fmt"

	"github.com/lohisoft/crawl-operator/crawler/fetch"
	"github.com/lohisoft/crawl-operator/crawler/runreport"
)

// extraCAs is the TLS config that trusts the certificate authorities in
// $LOHISOFTBOT_EXTRA_CA_CERTS (the manager's --crawler-extra-ca-file)
// besides the public roots, or nil, the public roots alone, when it is
// unset. A value it cannot use is bad input: the crawl would fail on every
// HTTPS site of that CA, so it ends before any request.
func extraCAs(getenv func(string) string) (*tls.Config, error) {
	v := getenv(runreport.ExtraCACertsEnv)
	if v == "" {
		return nil, nil
	}
	cfg, err := fetch.TLSWithExtraCAs([]byte(v))
	if err != nil {
		return nil, fmt.Errorf("$%s: %w", runreport.ExtraCACertsEnv, err)
	}
	return cfg, nil
}
