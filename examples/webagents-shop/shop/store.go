package shop

import (
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Service errors, mapped to protocol errors by the agent endpoint and to
// messages by the HTML pages.
var (
	ErrNotFound        = errors.New("shop: no such product")
	ErrEmailTaken      = errors.New("shop: email already registered")
	ErrBadCredentials  = errors.New("shop: wrong email or password")
	ErrInvalidEmail    = errors.New("shop: invalid email")
	ErrWeakPassword    = errors.New("shop: password must be 8 to 128 characters")
	ErrTooManyAttempts = errors.New("shop: too many sign-in attempts")
	ErrEmptyCart       = errors.New("shop: the cart is empty")
	ErrBadQuantity     = errors.New("shop: quantity must be 1 to 99 per product, 50 products per cart")
	ErrNotInCart       = errors.New("shop: product not in cart")
	ErrFull            = errors.New("shop: capacity reached")
	ErrQueryTooLong    = errors.New("shop: query too long")
	errHashUnavailable = errors.New("shop: password hashing failed")
)

// Limits of the service layer.
const (
	signInWindow        = 15 * time.Minute
	maxSignInFailures   = 5
	maxQueryChars       = 200
	maxCartLines        = 50
	maxOrdersPerUser    = 1000
	defaultPBKDF2Rounds = 600_000 // OWASP's figure for PBKDF2-HMAC-SHA256
	passwordKeyLen      = 32
	passwordSaltLen     = 16
	defaultMaxUsers     = 10_000
	maxEmailBytes       = 254
	minPasswordChars    = 8
	maxPasswordChars    = 128
	maxQuantity         = 99
	maxFailureRecords   = 10_000
)

// Product is one catalog entry.
type Product struct {
	ID          string `json:"productId"`
	Name        string `json:"name"`
	Description string `json:"description"`
	PriceCents  int    `json:"priceCents"`
}

// Price formats the price for people.
func (p Product) Price() string { return formatCents(p.PriceCents) }

func formatCents(c int) string { return fmt.Sprintf("$%d.%02d", c/100, c%100) }

// seedCatalog is the shop's fixed catalog. "wireless keyboard" matches
// exactly one product.
var seedCatalog = []Product{
	{"kbd-75", "Wireless Keyboard 75%", "Compact 75% layout, Bluetooth and 2.4 GHz, hot-swappable switches.", 8900},
	{"kbd-full", "Mechanical Keyboard", "Full-size wired keyboard with tactile switches.", 12900},
	{"mouse-w", "Wireless Mouse", "Ergonomic wireless mouse, 6 buttons.", 3900},
	{"pad-xl", "Desk Mat XL", "900 x 400 mm cloth desk mat.", 2400},
	{"cable-c", "USB-C Cable", "2 m braided USB-C to USB-C cable, 100 W.", 1500},
	{"stand-al", "Laptop Stand", "Aluminium stand, adjustable height.", 4900},
	{"cam-hd", "HD Webcam", "1080p webcam with privacy shutter.", 5900},
	{"hp-nc", "Noise-cancelling Headphones", "Over-ear wireless headphones with active noise cancelling.", 19900},
}

// CartLine is one product in a cart.
type CartLine struct {
	ProductID  string `json:"productId"`
	Name       string `json:"name"`
	Quantity   int    `json:"quantity"`
	PriceCents int    `json:"priceCents"`
}

// Cart is a user's cart.
type Cart struct {
	Items      []CartLine `json:"items"`
	TotalCents int        `json:"totalCents"`
}

// Order is a placed order.
type Order struct {
	ID         string     `json:"orderId"`
	Items      []CartLine `json:"items"`
	TotalCents int        `json:"totalCents"`
	PlacedAt   time.Time  `json:"placedAt"`
}

// User is an account. The password hash never leaves the store.
type User struct {
	ID    string
	Email string

	salt   []byte
	hash   []byte
	cart   []CartLine
	orders []Order
}

// Store is the shop's service layer, shared by the HTML pages and the agent
// endpoint. It is safe for concurrent use.
type Store struct {
	rounds   int
	maxUsers int

	mu       sync.Mutex
	products map[string]Product
	order    []string         // product ids in catalog order
	users    map[string]*User // by id
	byEmail  map[string]*User
	failures map[string][]time.Time // sign-in failures by email
	nextID   int
	// dummy is hashed for unknown emails so that timing does not reveal
	// which emails are registered.
	dummySalt []byte
}

func newStore(rounds, maxUsers int) *Store {
	s := &Store{
		rounds: rounds, maxUsers: maxUsers,
		products: map[string]Product{}, users: map[string]*User{}, byEmail: map[string]*User{},
		failures: map[string][]time.Time{}, dummySalt: make([]byte, passwordSaltLen),
	}
	rand.Read(s.dummySalt)
	for _, p := range seedCatalog {
		s.products[p.ID] = p
		s.order = append(s.order, p.ID)
	}
	return s
}

// Products returns the whole catalog in order.
func (s *Store) Products() []Product {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Product, 0, len(s.order))
	for _, id := range s.order {
		out = append(out, s.products[id])
	}
	return out
}

// Search returns the products whose name or description contains every word
// of the query (case-insensitive).
func (s *Store) Search(query string) ([]Product, error) {
	if utf8.RuneCountInString(query) > maxQueryChars {
		return nil, ErrQueryTooLong
	}
	words := strings.Fields(strings.ToLower(query))
	var out []Product
	for _, p := range s.Products() {
		name := strings.ToLower(p.Name)
		all := len(words) > 0
		for _, w := range words {
			if !strings.Contains(name, w) {
				all = false
				break
			}
		}
		if all {
			out = append(out, p)
		}
	}
	return out, nil
}

// Product returns one product.
func (s *Store) Product(id string) (Product, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.products[id]
	if !ok {
		return Product{}, ErrNotFound
	}
	return p, nil
}

func (s *Store) hash(password string, salt []byte) ([]byte, error) {
	h, err := pbkdf2.Key(sha256.New, password, salt, s.rounds, passwordKeyLen)
	if err != nil {
		return nil, errHashUnavailable
	}
	return h, nil
}

func normalizeEmail(email string) (string, error) {
	email = strings.ToLower(strings.TrimSpace(email))
	at := strings.IndexByte(email, '@')
	if len(email) > maxEmailBytes || at < 1 || at == len(email)-1 || strings.ContainsAny(email, " \t\r\n<>\"") {
		return "", ErrInvalidEmail
	}
	return email, nil
}

func checkPassword(password string) error {
	if n := utf8.RuneCountInString(password); n < minPasswordChars || n > maxPasswordChars {
		return ErrWeakPassword
	}
	return nil
}

// SignUp creates an account.
func (s *Store) SignUp(email, password string) (*User, error) {
	email, err := normalizeEmail(email)
	if err != nil {
		return nil, err
	}
	if err := checkPassword(password); err != nil {
		return nil, err
	}
	salt := make([]byte, passwordSaltLen)
	rand.Read(salt)
	hash, err := s.hash(password, salt)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, taken := s.byEmail[email]; taken {
		return nil, ErrEmailTaken
	}
	if len(s.users) >= s.maxUsers {
		return nil, ErrFull
	}
	s.nextID++
	u := &User{ID: fmt.Sprintf("usr-%d", s.nextID), Email: email, salt: salt, hash: hash}
	s.users[u.ID] = u
	s.byEmail[email] = u
	return u, nil
}

// SignIn checks a password. Repeated failures for one email are refused for
// a while with ErrTooManyAttempts.
func (s *Store) SignIn(email, password string) (*User, error) {
	email, err := normalizeEmail(email)
	if err != nil {
		return nil, ErrBadCredentials
	}
	now := time.Now()
	s.mu.Lock()
	if s.recentFailures(email, now) >= maxSignInFailures {
		s.mu.Unlock()
		return nil, ErrTooManyAttempts
	}
	// Count the attempt as a failure before hashing, so that concurrent
	// guesses cannot all pass the check while their hashes run; a success
	// clears the record.
	if len(s.failures) < maxFailureRecords || s.failures[email] != nil {
		s.failures[email] = append(s.failures[email], now)
	}
	u := s.byEmail[email]
	salt := s.dummySalt
	if u != nil {
		salt = u.salt
	}
	s.mu.Unlock()
	hash, err := s.hash(password, salt)
	if err != nil {
		return nil, err
	}
	if u == nil || subtle.ConstantTimeCompare(hash, u.hash) != 1 {
		return nil, ErrBadCredentials
	}
	s.mu.Lock()
	delete(s.failures, email)
	s.mu.Unlock()
	return u, nil
}

func (s *Store) recentFailures(email string, now time.Time) int {
	list := s.failures[email]
	i := 0
	for i < len(list) && now.Sub(list[i]) > signInWindow {
		i++
	}
	list = list[i:]
	if len(list) == 0 {
		delete(s.failures, email)
	} else {
		s.failures[email] = list
	}
	return len(list)
}

// User returns the user with the given id, or nil.
func (s *Store) User(id string) *User {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.users[id]
}

func (s *Store) cartOf(u *User) Cart {
	c := Cart{Items: slices.Clone(u.cart)}
	if c.Items == nil {
		c.Items = []CartLine{}
	}
	for _, l := range c.Items {
		c.TotalCents += l.PriceCents * l.Quantity
	}
	return c
}

// Cart returns a user's cart.
func (s *Store) Cart(userID string) Cart {
	s.mu.Lock()
	defer s.mu.Unlock()
	if u := s.users[userID]; u != nil {
		return s.cartOf(u)
	}
	return Cart{Items: []CartLine{}}
}

// CartAdd adds quantity of a product to a user's cart.
func (s *Store) CartAdd(userID, productID string, quantity int) (Cart, error) {
	if quantity < 1 || quantity > maxQuantity {
		return Cart{}, ErrBadQuantity
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.users[userID]
	p, ok := s.products[productID]
	if u == nil || !ok {
		return Cart{}, ErrNotFound
	}
	for i := range u.cart {
		if u.cart[i].ProductID == productID {
			if u.cart[i].Quantity+quantity > maxQuantity {
				return Cart{}, ErrBadQuantity
			}
			u.cart[i].Quantity += quantity
			return s.cartOf(u), nil
		}
	}
	if len(u.cart) >= maxCartLines {
		return Cart{}, ErrBadQuantity
	}
	u.cart = append(u.cart, CartLine{ProductID: p.ID, Name: p.Name, Quantity: quantity, PriceCents: p.PriceCents})
	return s.cartOf(u), nil
}

// CartRemove removes a product from a user's cart.
func (s *Store) CartRemove(userID, productID string) (Cart, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.users[userID]
	if u == nil {
		return Cart{}, ErrNotFound
	}
	i := slices.IndexFunc(u.cart, func(l CartLine) bool { return l.ProductID == productID })
	if i < 0 {
		return Cart{}, ErrNotInCart
	}
	u.cart = slices.Delete(u.cart, i, i+1)
	return s.cartOf(u), nil
}

// PlaceOrder turns the cart into an order and empties the cart.
func (s *Store) PlaceOrder(userID string) (Order, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.users[userID]
	if u == nil {
		return Order{}, ErrNotFound
	}
	if len(u.cart) == 0 {
		return Order{}, ErrEmptyCart
	}
	if len(u.orders) >= maxOrdersPerUser {
		return Order{}, ErrFull
	}
	c := s.cartOf(u)
	s.nextID++
	o := Order{ID: fmt.Sprintf("ord-%d", s.nextID), Items: c.Items, TotalCents: c.TotalCents, PlacedAt: time.Now().UTC()}
	u.orders = append(u.orders, o)
	u.cart = nil
	return o, nil
}

// Orders returns a user's orders, newest first.
func (s *Store) Orders(userID string) []Order {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.users[userID]
	if u == nil {
		return []Order{}
	}
	out := slices.Clone(u.orders)
	slices.Reverse(out)
	if out == nil {
		out = []Order{}
	}
	return out
}
