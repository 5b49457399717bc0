package control

// The control plane's guard: it runs before every endpoint and refuses
// requests a web page could forge. A page on another site can make a
// browser POST to a control plane on localhost (cross-site request
// forgery: a form POST to /reset deletes every topic), and a page whose DNS
// name it rebinds to 127.0.0.1 can read it as its own origin (DNS
// rebinding). The guard refuses both, and, when a token is set, every
// request that does not carry it.

import (
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// Option configures the control plane returned by New.
type Option func(*guard)

// WithToken requires token on every request except GET (or HEAD) /healthz, as
// "Authorization: Bearer <token>", as the query parameter ?token=<token>,
// or as the cookie the live page gets when it is opened with ?token=. A
// request without it gets 401. An empty token requires nothing.
func WithToken(token string) Option {
	return func(g *guard) { g.token = token }
}

// WithAllowedHosts adds host names (without port) that requests may name in
// their Host header, besides localhost, *.localhost and IP addresses, which
// are always allowed. "*" allows any host, turning the DNS rebinding check
// off (for a control plane behind a proxy that checks hosts itself).
func WithAllowedHosts(hosts ...string) Option {
	return func(g *guard) {
		for _, h := range hosts {
			if h = normalHost(h); h != "" {
				g.hosts[h] = true
			}
		}
	}
}

// tokenCookie names the cookie that carries the token for the live page's
// own requests (live.json) once the page was opened with ?token=. Browsers
// do not scope cookies by port, so the name carries the port the request
// came to: two control planes on one host keep their own tokens.
func tokenCookie(hostport string) string {
	if _, port, err := net.SplitHostPort(hostport); err == nil && port != "" {
		return "vastfake_token_" + port
	}
	return "vastfake_token"
}

type guard struct {
	token string
	hosts map[string]bool
	csrf  *http.CrossOriginProtection
	next  http.Handler
}

func newGuard(next http.Handler, opts []Option) *guard {
	g := &guard{hosts: map[string]bool{}, csrf: http.NewCrossOriginProtection(), next: next}
	for _, o := range opts {
		o(g)
	}
	return g
}

// ServeHTTP checks, in order: the Host header (403 for a host that is not
// allowed), the request's origin (403 for a cross-site request that
// changes state), and the token (401 without it); then serves the request.
func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !g.hostAllowed(r.Host) {
		writeError(w, http.StatusForbidden, fmt.Sprintf(
			"host %q is not allowed (DNS rebinding protection); use localhost or an IP address, or allow the host with -http-allow-hosts",
			r.Host))
		return
	}
	if err := g.crossSite(r); err != "" {
		writeError(w, http.StatusForbidden, err)
		return
	}
	if g.token != "" && !(r.URL.Path == "/healthz" && (r.Method == http.MethodGet || r.Method == http.MethodHead)) {
		if !g.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="vastfake"`)
			writeError(w, http.StatusUnauthorized,
				"this control plane needs its token: send \"Authorization: Bearer <token>\" or add ?token=<token>")
			return
		}
		if r.Method == http.MethodGet && r.URL.Path == "/" && r.URL.Query().Get("token") != "" {
			// The live page fetches live.json without the query: give it
			// the token as a cookie that no other site's request carries.
			http.SetCookie(w, &http.Cookie{Name: tokenCookie(r.Host), Value: g.token, Path: "/",
				HttpOnly: true, SameSite: http.SameSiteStrictMode})
		}
	}
	g.next.ServeHTTP(w, r)
}

// normalHost returns the host of a Host header or host name, lower case,
// without port, brackets or a trailing dot.
func normalHost(hostport string) string {
	host := hostport
	if u, err := url.Parse("http://" + hostport); err == nil && u.Host == hostport {
		host = u.Hostname()
	}
	return strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
}

// hostAllowed reports whether a request naming hostport in its Host header
// may be served. DNS rebinding needs a DNS name the attacker controls, so
// IP addresses, localhost and *.localhost (which browsers resolve to
// loopback themselves) are always allowed; any other name only when
// WithAllowedHosts names it. A request without a Host header (HTTP/1.0)
// comes from no browser and is allowed.
func (g *guard) hostAllowed(hostport string) bool {
	host := normalHost(hostport)
	if host == "" || g.hosts["*"] || g.hosts[host] {
		return true
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	_, err := netip.ParseAddr(host)
	return err == nil
}

// crossSite returns why a request is refused as cross-site, or "". GET,
// HEAD and OPTIONS change nothing and always pass. Any other method is
// refused when the browser says it comes from another site (Sec-Fetch-Site,
// or an Origin other than the control plane's own), as
// net/http.CrossOriginProtection decides. A request with neither header
// comes from no browser of this decade (every current browser sends Origin
// on a cross-site POST) and passes, so that curl -d keeps working.
func (g *guard) crossSite(r *http.Request) string {
	if err := g.csrf.Check(r); err != nil {
		return "cross-site request refused: " + err.Error()
	}
	return ""
}

// authorized reports whether r carries the token in its Authorization
// header, its token query parameter or the page's cookie.
func (g *guard) authorized(r *http.Request) bool {
	var given []string
	if auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		given = append(given, strings.TrimSpace(auth))
	}
	if t := r.URL.Query().Get("token"); t != "" {
		given = append(given, t)
	}
	if c, err := r.Cookie(tokenCookie(r.Host)); err == nil {
		given = append(given, c.Value)
	}
	for _, t := range given {
		if subtle.ConstantTimeCompare([]byte(t), []byte(g.token)) == 1 {
			return true
		}
	}
	return false
}
