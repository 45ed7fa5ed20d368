// Command crawler is LohiSoftBot: it crawls one site (`crawler crawl`),
// tests a robots.txt file the way the bot reads it (`crawler robots`), and
// verifies that an IP address is the bot's (`crawler verify`). See
// docs/crawler.md.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	stdlog "log"
	"log/slog"
	"net/netip"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/lohisoft/crawl-operator/crawler/egresscheck"
	"github.com/lohisoft/crawl-operator/crawler/engine"
	"github.com/lohisoft/crawl-operator/crawler/fetch"
	"github.com/lohisoft/crawl-operator/crawler/reporter"
	"github.com/lohisoft/crawl-operator/crawler/robots"
	"github.com/lohisoft/crawl-operator/crawler/runreport"
	"github.com/lohisoft/crawl-operator/crawler/verify"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1                      // runtime failure: final report not delivered, not verified
	exitUsage   = runreport.ExitBadInput // bad input

	exitEgressUnverified = runreport.ExitEgressUnverified // nothing sent: the egress address is not the published one
)

func main() {
	// SIGTERM or SIGINT cancels ctx: the crawl stops at once and the partial
	// result is reported (with a bounded retry); a second signal changes
	// nothing, the kubelet's SIGKILL after the grace period is the backstop.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

const usage = `usage:
  crawler crawl [flags] URL
  crawler robots --file PATH [--status 200] [--agent LohiSoftBot] URL...
  crawler verify [--dns-server HOST:PORT] IP
Run "crawler COMMAND -h" for the flags of a command.
`

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "crawl":
		return runCrawl(ctx, args[1:], stdout, stderr, getenv)
	case "robots":
		return runRobots(args[1:], stdin, stdout, stderr)
	case "verify":
		return runVerify(ctx, args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	return fail(stderr, exitUsage, fmt.Errorf("unknown command %q (want crawl, robots or verify)", args[0]))
}

// fail prints a one-line error.
func fail(stderr io.Writer, code int, err error) int {
	fmt.Fprintf(stderr, "crawler: %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
	return code
}

// failJSON logs a failure as the last line of a JSON log: level ERROR,
// the error as msg, with attrs as fields.
func failJSON(stderr io.Writer, code int, err error, attrs ...any) int {
	slog.New(slog.NewJSONHandler(stderr, nil)).Error(strings.ReplaceAll(err.Error(), "\n", " "), attrs...)
	return code
}

// parse parses flags that may come before or after the positional
// arguments, and returns the positionals. A bad flag is reported with
// failure: fail, or what the command's log format asks for.
func parse(fs *flag.FlagSet, args []string, stderr io.Writer, failure func(io.Writer, int, error) int) ([]string, int, bool) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.SetOutput(stderr)
				fs.Usage()
				return nil, exitOK, false
			}
			return nil, failure(stderr, exitUsage, err), false
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, 0, true
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// runCrawl is the crawl command, as a list of named steps: parse and check
// the flags, set up the log, configure the crawl, verify the source address
// sites will see, connect to the results endpoint, crawl, then print and
// deliver the result.
func runCrawl(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	o, code, ok := parseCrawl(args, stderr)
	if !ok {
		return code
	}
	tlsCfg, err := extraCAs(getenv)
	if err != nil {
		return o.fail(stderr, exitUsage, err)
	}
	log := o.logger(stderr)
	cfg := o.engineConfig(log)
	// The echo check copies cfg.Fetch: it trusts what the site fetches do.
	cfg.Fetch.TLS = tlsCfg
	egressIP, code, ok := o.verifyEgress(ctx, cfg, log, stderr)
	if !ok {
		return code
	}
	rep := o.connect(ctx, &cfg, egressIP, log, getenv)
	res, err := engine.Crawl(ctx, cfg, o.url)
	if err != nil {
		if errors.Is(err, engine.ErrBadInput) {
			return o.fail(stderr, exitUsage, err)
		}
		return o.fail(stderr, exitFailure, err)
	}
	res.EgressIP = egressIP
	return o.deliver(ctx, res, rep, stdout, stderr)
}

// crawlOptions are the crawl command's flags; parseCrawl fills and checks
// them.
type crawlOptions struct {
	maxPages                   int
	delay, timeout, reqTimeout time.Duration
	userAgent                  string
	allowPrivate               bool
	sourceIP                   string
	dnsServer                  string
	reportURL, reportToken     string
	logFormat                  string
	echoURL, expectEgressIP    string

	// Checked forms of the above.
	url          string
	source       netip.Addr
	echo         *url.URL
	expectEgress netip.Addr
}

// crawlFlags binds the crawl command's flags to o. It is the command's whole
// interface, kept in one place so that it reads top to bottom.
func (o *crawlOptions) crawlFlags() *flag.FlagSet {
	fs := flag.NewFlagSet("crawl", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: crawler crawl [flags] URL")
		fs.PrintDefaults()
	}
	fs.IntVar(&o.maxPages, "max-pages", runreport.MaxPages, "page requests per site, redirects included (at most 20)")
	fs.DurationVar(&o.delay, "delay", engine.DefaultDelay, "minimum time between requests to the site (raised by a robots.txt Crawl-delay, capped at 60s)")
	fs.StringVar(&o.userAgent, "user-agent", engine.DefaultUserAgent, "User-Agent header; its product (text before '/') is the robots.txt token")
	fs.BoolVar(&o.allowPrivate, "allow-private", false, "allow loopback, private and other non-public IPv4 targets (tests and local demos only)")
	fs.StringVar(&o.sourceIP, "source-ip", "", "local IPv4 address to send requests from (the egress IP)")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "time limit for the whole crawl")
	fs.DurationVar(&o.reqTimeout, "request-timeout", fetch.DefaultTotalTimeout, "time limit for one request, body included")
	fs.StringVar(&o.dnsServer, "dns-server", "", "resolve names with this DNS server (HOST:PORT) instead of the system resolver")
	fs.StringVar(&o.reportURL, "report-url", "", "POST progress and the final result to this results endpoint")
	fs.StringVar(&o.reportToken, "report-token", "", "bearer token for --report-url (default: $"+runreport.TokenEnv+")")
	fs.StringVar(&o.echoURL, "egress-echo-url", "", "before the first request to the site, ask this echo service (http or https) which source address sites see, and crawl only if it is --expect-egress-ip; it answers 200 with the caller's IPv4 address as plain text or as JSON {\"ip\":\"ADDRESS\"}")
	fs.StringVar(&o.expectEgressIP, "expect-egress-ip", "", "the IPv4 address sites must see (the egress node's published address), checked with --egress-echo-url")
	fs.StringVar(&o.logFormat, runreport.LogFormatFlag, runreport.LogFormatText, "log format on stderr: text or json (one object a line, with time, level and msg; what crawler Pods use)")
	return fs
}

// fail reports a failure as a log line in the chosen format. Flags given
// before a bad one are already set, and crawler Pods pass --log-format
// first, so even a refused flag is logged as JSON there.
func (o *crawlOptions) fail(stderr io.Writer, code int, err error) int {
	if o.logFormat == runreport.LogFormatJSON {
		return failJSON(stderr, code, err)
	}
	return fail(stderr, code, err)
}

// parseCrawl parses and checks the crawl command's arguments; ok is false
// when the command ends here with code.
func parseCrawl(args []string, stderr io.Writer) (o *crawlOptions, code int, ok bool) {
	o = &crawlOptions{}
	pos, code, ok := parse(o.crawlFlags(), args, stderr, o.fail)
	if !ok {
		return o, code, false
	}
	if err := o.check(pos); err != nil {
		return o, o.fail(stderr, exitUsage, err), false
	}
	return o, 0, true
}

// check validates the flags and the positional URL, and fills the checked
// fields.
func (o *crawlOptions) check(pos []string) error {
	if o.logFormat != runreport.LogFormatText && o.logFormat != runreport.LogFormatJSON {
		format := o.logFormat
		o.logFormat = runreport.LogFormatText
		return fmt.Errorf("--%s must be %s or %s, got %q", runreport.LogFormatFlag, runreport.LogFormatText, runreport.LogFormatJSON, format)
	}
	if len(pos) != 1 {
		return fmt.Errorf("crawl takes exactly one URL, got %d", len(pos))
	}
	o.url = pos[0]
	if o.maxPages < 1 || o.maxPages > runreport.MaxPages {
		return fmt.Errorf("--max-pages must be between 1 and %d, got %d", runreport.MaxPages, o.maxPages)
	}
	if o.delay < 0 || o.timeout <= 0 || o.reqTimeout <= 0 {
		return errors.New("--delay must not be negative, --timeout and --request-timeout must be positive")
	}
	if o.sourceIP != "" {
		a, err := netip.ParseAddr(o.sourceIP)
		if err != nil || !a.Unmap().Is4() {
			return fmt.Errorf("--source-ip must be an IPv4 address, got %q", o.sourceIP)
		}
		o.source = a.Unmap()
	}
	if o.reportURL != "" && !isHTTPURL(o.reportURL) {
		return fmt.Errorf("--report-url must be an http(s) URL, got %q", o.reportURL)
	}
	return o.checkEgress()
}

// checkEgress checks the egress verification flags: both or neither.
func (o *crawlOptions) checkEgress() error {
	if (o.echoURL == "") != (o.expectEgressIP == "") {
		return errors.New("--egress-echo-url and --expect-egress-ip go together")
	}
	if o.echoURL == "" {
		return nil
	}
	if !isHTTPURL(o.echoURL) {
		return fmt.Errorf("--egress-echo-url must be an http(s) URL, got %q", o.echoURL)
	}
	o.echo, _ = url.Parse(o.echoURL)
	a, err := netip.ParseAddr(o.expectEgressIP)
	if err != nil || !a.Unmap().Is4() {
		return fmt.Errorf("--expect-egress-ip must be an IPv4 address, got %q", o.expectEgressIP)
	}
	o.expectEgress = a.Unmap()
	return nil
}

// isHTTPURL reports whether s is an absolute http or https URL with a host.
func isHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// logger is the crawl's log in the chosen format. It also takes over the
// standard logger: net/http reports a server that sent more than it
// announced (bytes after a 304, say) through it, quoting those bytes, and
// page text must never reach the log, where each line of a Pod's log is
// one JSON object. The message is replaced by a line that says only that
// it happened.
func (o *crawlOptions) logger(stderr io.Writer) *slog.Logger {
	var handler slog.Handler = slog.NewTextHandler(stderr, nil)
	if o.logFormat == runreport.LogFormatJSON {
		handler = slog.NewJSONHandler(stderr, nil)
	}
	log := slog.New(handler)
	stdlog.SetFlags(0)
	stdlog.SetOutput(withheld{log})
	return log
}

// engineConfig is the crawl's configuration from the flags.
func (o *crawlOptions) engineConfig(log *slog.Logger) engine.Config {
	cfg := engine.Config{
		MaxPages:  o.maxPages,
		Delay:     o.delay,
		UserAgent: o.userAgent,
		Timeout:   o.timeout,
		Log:       log,
		Fetch: fetch.Config{
			Dialer:       fetch.Dialer{AllowPrivate: o.allowPrivate, SourceIP: o.source},
			TotalTimeout: o.reqTimeout,
		},
	}
	if o.dnsServer != "" {
		cfg.Fetch.Dialer.Resolver = verify.ResolverFor(o.dnsServer)
	}
	return cfg
}

// verifyEgress asks the echo service, through the crawl's own dialer, which
// source address sites will see, before anything is sent to the site, and
// returns it when it is the expected one. Otherwise the command ends here
// with ExitEgressUnverified, having sent the site nothing. Without
// --egress-echo-url there is nothing to verify.
func (o *crawlOptions) verifyEgress(ctx context.Context, cfg engine.Config, log *slog.Logger, stderr io.Writer) (ip string, code int, ok bool) {
	if o.echo == nil {
		return "", 0, true
	}
	fc := cfg.Fetch
	fc.UserAgent = cfg.UserAgent
	verified, err := egresscheck.Check{URL: o.echo, Expected: o.expectEgress, Fetch: fc}.Run(ctx)
	if ctx.Err() != nil {
		// Stopped (SIGTERM) while asking: that says nothing about the
		// node, which must not be blamed for it.
		return "", o.fail(stderr, exitFailure, fmt.Errorf("stopped before the egress address was verified: %w", ctx.Err())), false
	}
	if err != nil {
		return "", o.failEgress(stderr, err), false
	}
	log.Info("egress address verified", "ip", verified.String(), "echo", o.echo.Redacted())
	return verified.String(), 0, true
}

// failEgress ends the command on an unverified egress address. With JSON
// logs the last line carries both addresses as fields, so the operator
// reads them from the Pod's termination message without parsing prose.
func (o *crawlOptions) failEgress(stderr io.Writer, err error) int {
	var attrs []any
	var e *egresscheck.Error
	if errors.As(err, &e) {
		attrs = append(attrs, runreport.LogExpectedEgressIP, e.Expected.String())
		if e.Observed.IsValid() {
			attrs = append(attrs, runreport.LogObservedEgressIP, e.Observed.String())
		}
	}
	if o.logFormat == runreport.LogFormatJSON {
		return failJSON(stderr, exitEgressUnverified, err, attrs...)
	}
	return fail(stderr, exitEgressUnverified, err)
}

// connect sets up reporting to the results endpoint, when there is one:
// progress after every page, and the validators of the site's last crawl
// for conditional requests (without them every page is fetched in full).
// It returns nil without --report-url.
func (o *crawlOptions) connect(ctx context.Context, cfg *engine.Config, egressIP string, log *slog.Logger, getenv func(string) string) *reporter.Client {
	if o.reportURL == "" {
		return nil
	}
	token := o.reportToken
	if token == "" {
		token = getenv(runreport.TokenEnv)
	}
	rep := reporter.New(o.reportURL, token, log)
	cfg.Progress = func(c runreport.Crawl) {
		c.EgressIP = egressIP
		rep.Progress(ctx, c)
	}
	if prev, err := rep.Previous(ctx); err != nil {
		log.Warn("previous crawl's validators not available: every page is fetched in full", "err", err)
	} else {
		cfg.Previous = prev.Pages
		log.Info("previous crawl", "pages", len(prev.Pages))
	}
	return rep
}

// deliver prints the crawl document on stdout and sends it to the results
// endpoint as the final report, when there is one.
func (o *crawlOptions) deliver(ctx context.Context, res runreport.Crawl, rep *reporter.Client, stdout, stderr io.Writer) int {
	enc := json.NewEncoder(stdout)
	if o.logFormat == runreport.LogFormatText {
		// For people. With JSON logs (a Pod, whose stdout and stderr are
		// one log) the document stays on one line, so every line of the
		// log is one JSON object.
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(res); err != nil {
		return o.fail(stderr, exitFailure, err)
	}
	if rep != nil {
		// The final report goes out even when the crawl was interrupted
		// (SIGTERM: the Pod is being stopped), but then within
		// reporter.DefaultStopGrace, so the process ends inside the Pod's
		// termination grace period however the results endpoint behaves.
		if err := rep.Final(ctx, res); err != nil {
			return o.fail(stderr, exitFailure, err)
		}
	}
	return exitOK
}

// withheld turns what the standard logger is given into a warning that
// withholds the text.
type withheld struct{ log *slog.Logger }

func (w withheld) Write(p []byte) (int, error) {
	w.log.Warn("net/http logged a message about the site's connection (text withheld: it may quote what the site sent)")
	return len(p), nil
}

func runRobots(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("robots", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: crawler robots --file PATH [--status 200] [--agent LohiSoftBot] URL...")
		fs.PrintDefaults()
	}
	file := fs.String("file", "", "robots.txt file to test (- for standard input)")
	status := fs.Int("status", 200, "HTTP status the file is served with (4xx: no restrictions; 429, 5xx: nothing allowed)")
	agent := fs.String("agent", engine.DefaultToken, "product token to test")
	urls, code, ok := parse(fs, args, stderr, fail)
	if !ok {
		return code
	}
	if *file == "" {
		return fail(stderr, exitUsage, errors.New("robots: --file is required"))
	}
	if len(urls) == 0 {
		return fail(stderr, exitUsage, errors.New("robots: give at least one URL"))
	}
	if *status < 100 || *status > 599 {
		return fail(stderr, exitUsage, fmt.Errorf("robots: --status must be an HTTP status, got %d", *status))
	}
	var body []byte
	var err error
	if *file == "-" {
		body, err = io.ReadAll(io.LimitReader(stdin, 4*robots.MaxSize))
	} else {
		body, err = readFileCapped(*file, 4*robots.MaxSize)
	}
	if err != nil {
		return fail(stderr, exitUsage, fmt.Errorf("robots: %w", err))
	}
	// The same code path the crawler uses for a robots.txt response.
	p := robots.FromStatus(*status, body)
	for _, u := range urls {
		verdict := "disallowed"
		if p.Allowed(*agent, u) {
			verdict = "allowed"
		}
		fmt.Fprintf(stdout, "%s\t%s\n", verdict, u)
	}
	return exitOK
}

func readFileCapped(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, n))
}

func runVerify(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: crawler verify [--dns-server HOST:PORT] IP")
		fs.PrintDefaults()
	}
	dnsServer := fs.String("dns-server", "", "ask this DNS server (HOST:PORT) instead of the system resolver")
	pos, code, ok := parse(fs, args, stderr, fail)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		return fail(stderr, exitUsage, fmt.Errorf("verify takes exactly one IP address, got %d", len(pos)))
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	host, err := verify.Verify(ctx, verify.ResolverFor(*dnsServer), pos[0])
	if errors.Is(err, verify.ErrBadIP) {
		return fail(stderr, exitUsage, err)
	}
	if err != nil {
		return fail(stderr, exitFailure, err)
	}
	fmt.Fprintln(stdout, host)
	return exitOK
}
