package engine

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
)

// challengeMarkers are byte strings that only bot-protection interstitials
// and captcha walls contain. They are looked for only in 403/429/503
// responses, so an ordinary page with a captcha-protected contact form is
// not mistaken for a wall.
var challengeMarkers = [][]byte{
	[]byte("cf-chl"),                       // Cloudflare challenge scripts and forms
	[]byte("/cdn-cgi/challenge-platform/"), // Cloudflare
	[]byte("<title>Just a moment...</title>"),
	[]byte("Attention Required! | Cloudflare"),
	[]byte("challenges.cloudflare.com/turnstile"),
	[]byte("g-recaptcha"),             // Google reCAPTCHA
	[]byte("hcaptcha.com"),            // hCaptcha
	[]byte("captcha-delivery.com"),    // DataDome
	[]byte("_Incapsula_Resource"),     // Imperva
	[]byte("px-captcha"),              // HUMAN / PerimeterX
	[]byte("awswaf.com"),              // AWS WAF captcha
	[]byte("sucuri_cloudproxy_js"),    // Sucuri
	[]byte("ddos-guard.net/js/check"), // DDoS-Guard
}

// isChallenge reports whether a response is a bot-protection challenge.
// The crawler never tries to pass one: it stops crawling the site.
func isChallenge(status int, h http.Header, body []byte) bool {
	for _, v := range h.Values("Cf-Mitigated") {
		if strings.EqualFold(strings.TrimSpace(v), "challenge") {
			return true
		}
	}
	if status != http.StatusForbidden && status != http.StatusTooManyRequests && status != http.StatusServiceUnavailable {
		return false
	}
	for _, m := range challengeMarkers {
		if bytes.Contains(body, m) {
			return true
		}
	}
	return false
}

// challengeReason is the skipped entry of the URL that showed a challenge.
func challengeReason(status int) string {
	return fmt.Sprintf("bot protection challenge (HTTP %d): not bypassed, site left alone", status)
}
