// Package identity holds the facts about LohiSoftBot that site owners rely
// on: who runs it, how it names itself, where it comes from, how much it
// fetches. The manager fills one Identity from its flags; the bot page, the
// egress self-check and the crawler Pods all read that same value, so the
// published facts cannot drift from what the bot does.
package identity

import (
	"errors"
	"flag"
	"fmt"
	"net/mail"
	"net/url"
	"strings"

	"github.com/lohisoft/crawl-operator/crawler/engine"
	"github.com/lohisoft/crawl-operator/crawler/robots"
	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/crawler/verify"
)

// Identity is the bot's public identity.
type Identity struct {
	// Operator is the legal entity that runs the bot.
	Operator string
	// Contact is the email address for questions and exclusion requests.
	Contact string
	// UserAgent is what crawler Pods send now.
	UserAgent string
	// OtherUserAgents are older forms that are still legitimate, e.g.
	// while a new UserAgent is being rolled out.
	OtherUserAgents []string
	// ProductToken is what robots.txt groups must name to address the bot.
	ProductToken string
	// HostnameSuffix ends every crawler hostname (PTR name), with a leading
	// dot: ".bot.lohisoft.com".
	HostnameSuffix string
	// MaxPages is the crawl budget: pages fetched per site and crawl.
	MaxPages int
	// IPsURL is where the machine-readable IP list is published.
	IPsURL string
}

// Defaults of the fields that are not taken from the crawler itself.
const (
	DefaultOperator = "LohiSoft s.r.o."
	DefaultContact  = "message@lohisoft.com"
	DefaultIPsURL   = "https://lohisoft.com/bot/ips.json"
	// DefaultLegacyUserAgent is the email form being replaced by the URL form.
	DefaultLegacyUserAgent = "LohiSoftBot/1.0 (+message@lohisoft.com)"
)

// Default returns the identity as published. The user-agent, product token,
// budget and hostname suffix come from the crawler packages that enforce
// them, so they are written down once.
func Default() Identity {
	return Identity{
		Operator:        DefaultOperator,
		Contact:         DefaultContact,
		UserAgent:       engine.DefaultUserAgent,
		OtherUserAgents: []string{DefaultLegacyUserAgent},
		ProductToken:    engine.TokenFor(engine.DefaultUserAgent),
		HostnameSuffix:  verify.Suffix,
		MaxPages:        runreport.MaxPages,
		IPsURL:          DefaultIPsURL,
	}
}

// UserAgents returns the current user-agent followed by the other
// legitimate ones.
func (id Identity) UserAgents() []string {
	return append([]string{id.UserAgent}, id.OtherUserAgents...)
}

// Validate reports every fact that would make the published page wrong or
// the FCrDNS check meaningless.
func (id Identity) Validate() error {
	var errs []error
	if strings.TrimSpace(id.Operator) == "" {
		errs = append(errs, errors.New("operator must not be empty"))
	}
	if a, err := mail.ParseAddress(id.Contact); err != nil || a.Address != id.Contact {
		errs = append(errs, fmt.Errorf("contact %q must be a bare email address", id.Contact))
	}
	if id.ProductToken == "" {
		errs = append(errs, errors.New("product token must not be empty"))
	}
	for _, ua := range id.UserAgents() {
		// robots.txt rules reach the bot through the product token, so every
		// user-agent it sends must carry the token the page tells owners to use.
		if robots.ProductToken(ua) != id.ProductToken {
			errs = append(errs, fmt.Errorf("user-agent %q does not start with the product token %q", ua, id.ProductToken))
		}
	}
	if err := checkSuffix(id.HostnameSuffix); err != nil {
		errs = append(errs, err)
	}
	if id.MaxPages < 1 || id.MaxPages > runreport.MaxPages {
		errs = append(errs, fmt.Errorf("budget %d must be between 1 and the crawler's limit %d", id.MaxPages, runreport.MaxPages))
	}
	if u, err := url.Parse(id.IPsURL); err != nil || u.Scheme != "https" || u.Host == "" {
		errs = append(errs, fmt.Errorf("IP list URL %q must be an absolute https URL", id.IPsURL))
	}
	return errors.Join(errs...)
}

// checkSuffix insists on a leading dot and at least two labels: a suffix
// like ".com" would let anyone's PTR name pass the FCrDNS check.
func checkSuffix(s string) error {
	name := strings.TrimPrefix(s, ".")
	if !strings.HasPrefix(s, ".") || strings.HasSuffix(s, ".") || strings.Count(name, ".") < 1 || strings.Contains(name, "..") {
		return fmt.Errorf("hostname suffix %q must look like .bot.example.com (leading dot, two or more labels)", s)
	}
	if s != strings.ToLower(s) {
		return fmt.Errorf("hostname suffix %q must be lower case", s)
	}
	return nil
}

// BindFlags registers the --bot-* flags on fs with id's current values as
// defaults. The current user-agent is not among them: it is the manager's
// --crawler-user-agent, because the Pods must send exactly what the page
// states.
func (id *Identity) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&id.Operator, "bot-operator", id.Operator, "Legal operator of the bot, as stated on /bot.")
	fs.StringVar(&id.Contact, "bot-contact", id.Contact, "Contact email address for site owners, as stated on /bot.")
	fs.StringVar(&id.HostnameSuffix, "bot-hostname-suffix", id.HostnameSuffix, "DNS suffix every egress node's PTR name must end in (FCrDNS), with a leading dot.")
	fs.StringVar(&id.IPsURL, "bot-ips-url", id.IPsURL, "Public URL of the bot's IP list, as linked from /bot.")
	fs.Var(&listFlag{list: &id.OtherUserAgents}, "bot-legacy-user-agents",
		"Comma-separated older user-agents that are still legitimate; empty lists none.")
}

// listFlag is a comma-separated list flag. A user-agent containing a comma
// cannot be given this way; Validate then reports the pieces, which do not
// start with the product token.
type listFlag struct {
	list *[]string
}

func (f *listFlag) String() string {
	if f == nil || f.list == nil {
		return ""
	}
	return strings.Join(*f.list, ",")
}

func (f *listFlag) Set(v string) error {
	*f.list = nil
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			*f.list = append(*f.list, item)
		}
	}
	return nil
}
