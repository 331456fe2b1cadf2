package shop

import (
	"bytes"
	"errors"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"

	"github.com/agentbridge/agentbridge/webagents"
)

const maxFormBytes = 16 << 10

var pageTemplates = template.Must(template.New("layout").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}} · Agent Shop</title>
<link rel="alternate" type="text/markdown" href="/webagents.md">
<style>body{font-family:system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;color:#222}
nav a,nav form{margin-right:1rem;display:inline}.err{color:#a00}.price{font-weight:bold}
li{margin:.4rem 0}form.inline{display:inline}input{margin:.2rem}</style></head>
<body><nav><a href="/">Home</a><a href="/cart">Cart</a><a href="/orders">Orders</a>
{{if .Email}}<span>Signed in as {{.Email}}</span>
<form class="inline" method="post" action="/signout"><input type="hidden" name="csrf" value="{{.CSRF}}"><button>Sign out</button></form>
{{else}}<a href="/signin">Sign in</a><a href="/signup">Sign up</a>{{end}}</nav>
<h1>{{.Title}}</h1>
{{if .Error}}<p class="err">{{.Error}}</p>{{end}}
{{template "body" .}}
<footer><p><small>Agents: see <a href="/webagents.md">/webagents.md</a>.</small></p></footer>
</body></html>`))

func page(body string) *template.Template {
	return template.Must(template.Must(pageTemplates.Clone()).New("body").Parse(body))
}

var (
	homePage = page(`<form method="get" action="/products"><input name="q" placeholder="Search" value="{{.Query}}"><button>Search</button></form>
<ul>{{range .Products}}<li><a href="/products/{{.ID}}">{{.Name}}</a> <span class="price">{{.Price}}</span></li>{{else}}<li>No products match.</li>{{end}}</ul>`)
	productPage = page(`{{with .Product}}<p>{{.Description}}</p><p class="price">{{.Price}}</p>{{end}}
<form method="post" action="/cart/add"><input type="hidden" name="csrf" value="{{.CSRF}}">
<input type="hidden" name="productId" value="{{.Product.ID}}"><input name="quantity" type="number" min="1" max="99" value="1">
<button>Add to cart</button></form>`)
	accountPage = page(`<form method="post" action="{{.Action}}"><input type="hidden" name="csrf" value="{{.CSRF}}">
<label>Email <input name="email" type="email" required value="{{.FormEmail}}"></label><br>
<label>Password <input name="password" type="password" required minlength="{{.MinPassword}}"></label><br>
<button>{{.Title}}</button></form>`)
	cartPage = page(`{{if .Cart.Items}}<ul>{{range .Cart.Items}}<li>{{.Quantity}} × <a href="/products/{{.ProductID}}">{{.Name}}</a>
<form class="inline" method="post" action="/cart/remove"><input type="hidden" name="csrf" value="{{$.CSRF}}">
<input type="hidden" name="productId" value="{{.ProductID}}"><button>Remove</button></form></li>{{end}}</ul>
<p>Total: <span class="price">{{.Total}}</span></p>
<form method="post" action="/orders"><input type="hidden" name="csrf" value="{{.CSRF}}"><button>Place order (cannot be undone)</button></form>
{{else}}<p>The cart is empty.</p>{{end}}`)
	ordersPage = page(`<ul>{{range .Orders}}<li>{{.ID}}: {{len .Items}} product(s), {{$.Money .TotalCents}}</li>{{else}}<li>No orders yet.</li>{{end}}</ul>`)
)

// view is the data every page template gets.
type view struct {
	Title, Error, Email, CSRF, Query, Action, FormEmail string
	MinPassword                                         int
	Products                                            []Product
	Product                                             Product
	Cart                                                Cart
	Total                                               string
	Orders                                              []Order
}

// Money formats cents for templates.
func (view) Money(c int) string { return formatCents(c) }

func (s *Shop) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.home)
	mux.HandleFunc("GET /products", s.search)
	mux.HandleFunc("GET /products/{id}", s.product)
	mux.HandleFunc("GET /signup", s.accountForm("Sign up", "/signup"))
	mux.HandleFunc("GET /signin", s.accountForm("Sign in", "/signin"))
	mux.HandleFunc("POST /signup", s.form(s.signUp))
	mux.HandleFunc("POST /signin", s.form(s.signIn))
	mux.HandleFunc("POST /signout", s.form(s.signOut))
	mux.HandleFunc("GET /cart", s.cart)
	mux.HandleFunc("POST /cart/add", s.form(s.cartAdd))
	mux.HandleFunc("POST /cart/remove", s.form(s.cartRemove))
	mux.HandleFunc("GET /orders", s.orders)
	mux.HandleFunc("POST /orders", s.form(s.placeOrder))
	return mux
}

func (s *Shop) newView(sess *session, title string) view {
	v := view{Title: title, CSRF: sess.csrfToken(), MinPassword: minPasswordChars}
	if u := s.store.User(sess.user()); u != nil {
		v.Email = u.Email
	}
	return v
}

func (s *Shop) render(w http.ResponseWriter, r *http.Request, status int, t *template.Template, v view) {
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", v); err != nil {
		if s.logger != nil {
			s.logger.ErrorContext(r.Context(), "shop: render", slog.String("error", err.Error()))
		}
		http.Error(w, "Internal error.", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

func (s *Shop) home(w http.ResponseWriter, r *http.Request) {
	sess := s.sessions.load(w, r)
	v := s.newView(sess, "Agent Shop")
	v.Products = s.store.Products()
	s.render(w, r, http.StatusOK, homePage, v)
}

func (s *Shop) search(w http.ResponseWriter, r *http.Request) {
	sess := s.sessions.load(w, r)
	v := s.newView(sess, "Search")
	v.Query = r.URL.Query().Get("q")
	found, err := s.store.Search(v.Query)
	if err != nil {
		v.Error = "The query is too long."
		s.render(w, r, http.StatusBadRequest, homePage, v)
		return
	}
	v.Products = found
	s.render(w, r, http.StatusOK, homePage, v)
}

func (s *Shop) product(w http.ResponseWriter, r *http.Request) {
	sess := s.sessions.load(w, r)
	p, err := s.store.Product(r.PathValue("id"))
	if err != nil {
		v := s.newView(sess, "Not found")
		v.Error = "No such product."
		s.render(w, r, http.StatusNotFound, homePage, v)
		return
	}
	v := s.newView(sess, p.Name)
	v.Product = p
	s.render(w, r, http.StatusOK, productPage, v)
}

func (s *Shop) accountForm(title, action string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v := s.newView(s.sessions.load(w, r), title)
		v.Action = action
		s.render(w, r, http.StatusOK, accountPage, v)
	}
}

// form wraps a form POST handler: same-origin and CSRF checks, bounded body.
func (s *Shop) form(fn func(w http.ResponseWriter, r *http.Request, sess *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sess := s.sessions.load(w, r)
		if o := r.Header.Get("Origin"); o != "" && o != s.originFor(r) {
			http.Error(w, "Cross-origin form refused.", http.StatusForbidden)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		if err := r.ParseForm(); err != nil {
			http.Error(w, "Bad form.", http.StatusBadRequest)
			return
		}
		if !sess.validCSRF(r.PostForm.Get("csrf")) {
			http.Error(w, "The form expired; reload the page and try again.", http.StatusForbidden)
			return
		}
		fn(w, r, sess)
	}
}

// originFor is the public origin, or the loopback address of the request
// when the shop has none configured.
func (s *Shop) originFor(r *http.Request) string {
	if s.origin != "" {
		return s.origin
	}
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if ap, err := netip.ParseAddrPort(a.String()); err == nil && ap.Addr().IsLoopback() {
			return "http://" + ap.String()
		}
	}
	return ""
}

func (s *Shop) signUp(w http.ResponseWriter, r *http.Request, sess *session) {
	s.authForm(w, r, sess, "Sign up", "/signup", s.store.SignUp)
}

func (s *Shop) signIn(w http.ResponseWriter, r *http.Request, sess *session) {
	s.authForm(w, r, sess, "Sign in", "/signin", s.store.SignIn)
}

func (s *Shop) authForm(w http.ResponseWriter, r *http.Request, sess *session, title, action string, fn func(string, string) (*User, error)) {
	email := r.PostForm.Get("email")
	u, err := fn(email, r.PostForm.Get("password"))
	if err != nil {
		v := s.newView(sess, title)
		v.Action, v.FormEmail = action, email
		v.Error = messageFor(err)
		s.render(w, r, statusFor(err), accountPage, v)
		return
	}
	s.sessions.signIn(w, sess, u.ID)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (s *Shop) signOut(w http.ResponseWriter, r *http.Request, sess *session) {
	s.sessions.signOut(w, sess)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (s *Shop) requireUser(w http.ResponseWriter, r *http.Request, sess *session) (string, bool) {
	uid := sess.user()
	if uid == "" {
		http.Redirect(w, r, "/signin", http.StatusSeeOther)
		return "", false
	}
	return uid, true
}

func (s *Shop) cart(w http.ResponseWriter, r *http.Request) {
	sess := s.sessions.load(w, r)
	s.renderCart(w, r, sess, http.StatusOK, "")
}

func (s *Shop) renderCart(w http.ResponseWriter, r *http.Request, sess *session, status int, msg string) {
	uid, ok := s.requireUser(w, r, sess)
	if !ok {
		return
	}
	v := s.newView(sess, "Cart")
	v.Cart = s.store.Cart(uid)
	v.Total = formatCents(v.Cart.TotalCents)
	v.Error = msg
	s.render(w, r, status, cartPage, v)
}

func (s *Shop) cartAdd(w http.ResponseWriter, r *http.Request, sess *session) {
	s.cartForm(w, r, sess, "/cart", func(uid string) error {
		qty, err := strconv.Atoi(r.PostForm.Get("quantity"))
		if err != nil {
			qty = 1
		}
		_, err = s.store.CartAdd(uid, r.PostForm.Get("productId"), qty)
		return err
	})
}

func (s *Shop) cartRemove(w http.ResponseWriter, r *http.Request, sess *session) {
	s.cartForm(w, r, sess, "/cart", func(uid string) error {
		_, err := s.store.CartRemove(uid, r.PostForm.Get("productId"))
		return err
	})
}

func (s *Shop) placeOrder(w http.ResponseWriter, r *http.Request, sess *session) {
	s.cartForm(w, r, sess, "/orders", func(uid string) error {
		_, err := s.store.PlaceOrder(uid)
		return err
	})
}

// cartForm runs a signed-in cart operation and redirects on success, or
// shows the cart with the error.
func (s *Shop) cartForm(w http.ResponseWriter, r *http.Request, sess *session, next string, op func(uid string) error) {
	uid, ok := s.requireUser(w, r, sess)
	if !ok {
		return
	}
	if err := op(uid); err != nil {
		s.renderCart(w, r, sess, statusFor(err), messageFor(err))
		return
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (s *Shop) orders(w http.ResponseWriter, r *http.Request) {
	sess := s.sessions.load(w, r)
	uid, ok := s.requireUser(w, r, sess)
	if !ok {
		return
	}
	v := s.newView(sess, "Orders")
	v.Orders = s.store.Orders(uid)
	s.render(w, r, http.StatusOK, ordersPage, v)
}

// messageFor and statusFor reuse the agent endpoint's mapping, so people and
// agents are told the same thing.
func messageFor(err error) string {
	var we *webagents.Error
	if errors.As(protocolError(err), &we) {
		return we.Message
	}
	return "Something went wrong."
}

func statusFor(err error) int {
	var we *webagents.Error
	if errors.As(protocolError(err), &we) {
		return we.HTTPStatus()
	}
	return http.StatusInternalServerError
}
