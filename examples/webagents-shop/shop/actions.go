package shop

import (
	"context"
	"errors"
	"time"

	"github.com/agentbridge/agentbridge/webagents"
)

// protocolError maps a service error to what an agent is told.
func protocolError(err error) error {
	switch {
	case errors.Is(err, ErrNotFound):
		return &webagents.Error{Status: 404, Code: "not_found", Message: "No such product."}
	case errors.Is(err, ErrNotInCart):
		return &webagents.Error{Status: 404, Code: "not_found", Message: "That product is not in the cart."}
	case errors.Is(err, ErrEmailTaken):
		return &webagents.Error{Status: 409, Code: "conflict", Message: "That email is already registered."}
	case errors.Is(err, ErrEmptyCart):
		return &webagents.Error{Status: 409, Code: "conflict", Message: "The cart is empty."}
	case errors.Is(err, ErrBadCredentials):
		return &webagents.Error{Status: 401, Code: webagents.CodeUnauthorized, Message: "Wrong email or password."}
	case errors.Is(err, ErrTooManyAttempts):
		return &webagents.Error{Status: 429, Code: webagents.CodeRateLimited, Message: "Too many sign-in attempts; try again later."}
	case errors.Is(err, ErrInvalidEmail):
		return &webagents.Error{Status: 400, Code: webagents.CodeInvalidInput, Message: "That is not an email address."}
	case errors.Is(err, ErrWeakPassword):
		return &webagents.Error{Status: 400, Code: webagents.CodeInvalidInput, Message: "Passwords are 8 to 128 characters."}
	case errors.Is(err, ErrBadQuantity):
		return &webagents.Error{Status: 400, Code: webagents.CodeInvalidInput, Message: "Quantity must be 1 to 99 per product, 50 products per cart."}
	case errors.Is(err, ErrQueryTooLong):
		return &webagents.Error{Status: 400, Code: webagents.CodeInvalidInput, Message: "The query is too long."}
	case errors.Is(err, ErrFull):
		return &webagents.Error{Status: 503, Code: "unavailable", Message: "The shop is full; try again later."}
	}
	return err // reported as 500 internal, without detail
}

var errSignInFirst = &webagents.Error{Status: 401, Code: webagents.CodeUnauthorized, Message: "Sign in first."}

// searchResult is catalog.search's result.
type searchResult struct {
	Query     string    `json:"query"`
	Results   []Product `json:"results"`
	ProductID string    `json:"productId,omitempty"` // set when exactly one product matches
}

type accountResult struct {
	SignedIn bool   `json:"signedIn"`
	UserID   string `json:"userId,omitempty"`
	Email    string `json:"email,omitempty"`
}

// Actions returns a handler for each action of the manifest. They need the
// request's AgentSession in their context (WithAgentSession).
func (s *Shop) Actions() map[string]webagents.ActionHandler {
	actions := map[string]webagents.ActionHandler{
		"catalog.search":  webagents.ActionFunc(s.actSearch),
		"catalog.product": webagents.ActionFunc(s.actProduct),
		"account.signUp":  webagents.ActionFunc(s.actSignUp),
		"account.signIn":  webagents.ActionFunc(s.actSignIn),
		"account.signOut": webagents.ActionFunc(s.actSignOut),
		"account.me":      webagents.ActionFunc(s.actMe),
		"cart.add":        s.signedIn(s.actCartAdd),
		"cart.remove":     s.signedIn(s.actCartRemove),
		"cart.state":      s.signedIn(s.actCartState),
		"order.place":     s.signedIn(s.actOrderPlace),
		"order.list":      s.signedIn(s.actOrderList),
	}
	if s.onAction != nil {
		for name, h := range actions {
			actions[name] = webagents.ActionFunc(func(ctx context.Context, req *webagents.ActionRequest) (any, error) {
				defer func() { s.onAction(req.Operation, name, req.Started, time.Since(req.Started)) }()
				return h.ServeAction(ctx, req)
			})
		}
	}
	return actions
}

// signedIn wraps an action that needs a signed-in user: every action
// authenticates itself, whatever pathPrefixes say.
func (s *Shop) signedIn(fn func(ctx context.Context, userID string, req *webagents.ActionRequest) (any, error)) webagents.ActionHandler {
	return webagents.ActionFunc(func(ctx context.Context, req *webagents.ActionRequest) (any, error) {
		as, err := sessionFrom(ctx)
		if err != nil {
			return nil, err
		}
		uid := as.userID()
		if uid == "" || s.store.User(uid) == nil {
			return nil, errSignInFirst
		}
		res, err := fn(ctx, uid, req)
		if err != nil {
			return nil, protocolError(err)
		}
		return res, nil
	})
}

func (s *Shop) actSearch(_ context.Context, req *webagents.ActionRequest) (any, error) {
	var in struct {
		Query string `json:"query"`
	}
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	found, err := s.store.Search(in.Query)
	if err != nil {
		return nil, protocolError(err)
	}
	res := searchResult{Query: in.Query, Results: found}
	if res.Results == nil {
		res.Results = []Product{}
	}
	if len(found) == 1 {
		res.ProductID = found[0].ID
	}
	return res, nil
}

func (s *Shop) actProduct(_ context.Context, req *webagents.ActionRequest) (any, error) {
	var in struct {
		ProductID string `json:"productId"`
	}
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	p, err := s.store.Product(in.ProductID)
	if err != nil {
		return nil, protocolError(err)
	}
	return p, nil
}

type credentials struct {
	Email    string `json:"email"`
	Password string `json:"password"`
}

func (s *Shop) actSignUp(ctx context.Context, req *webagents.ActionRequest) (any, error) {
	return s.authenticate(ctx, req, s.store.SignUp)
}

func (s *Shop) actSignIn(ctx context.Context, req *webagents.ActionRequest) (any, error) {
	return s.authenticate(ctx, req, s.store.SignIn)
}

func (s *Shop) authenticate(ctx context.Context, req *webagents.ActionRequest, fn func(email, password string) (*User, error)) (any, error) {
	as, err := sessionFrom(ctx)
	if err != nil {
		return nil, err
	}
	var in credentials
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	u, err := fn(in.Email, in.Password)
	if err != nil {
		return nil, protocolError(err)
	}
	as.signIn(ctx, u.ID)
	return accountResult{SignedIn: true, UserID: u.ID, Email: u.Email}, nil
}

func (s *Shop) actSignOut(ctx context.Context, req *webagents.ActionRequest) (any, error) {
	as, err := sessionFrom(ctx)
	if err != nil {
		return nil, err
	}
	as.signOut(ctx)
	return accountResult{SignedIn: false}, nil
}

func (s *Shop) actMe(ctx context.Context, _ *webagents.ActionRequest) (any, error) {
	as, err := sessionFrom(ctx)
	if err != nil {
		return nil, err
	}
	u := s.store.User(as.userID())
	if u == nil {
		return accountResult{}, nil
	}
	return accountResult{SignedIn: true, UserID: u.ID, Email: u.Email}, nil
}

func (s *Shop) actCartAdd(_ context.Context, uid string, req *webagents.ActionRequest) (any, error) {
	in := struct {
		ProductID string `json:"productId"`
		Quantity  int    `json:"quantity"`
	}{Quantity: 1}
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	return s.store.CartAdd(uid, in.ProductID, in.Quantity)
}

func (s *Shop) actCartRemove(_ context.Context, uid string, req *webagents.ActionRequest) (any, error) {
	var in struct {
		ProductID string `json:"productId"`
	}
	if err := req.Decode(&in); err != nil {
		return nil, err
	}
	return s.store.CartRemove(uid, in.ProductID)
}

func (s *Shop) actCartState(_ context.Context, uid string, _ *webagents.ActionRequest) (any, error) {
	return s.store.Cart(uid), nil
}

func (s *Shop) actOrderPlace(_ context.Context, uid string, _ *webagents.ActionRequest) (any, error) {
	return s.store.PlaceOrder(uid)
}

func (s *Shop) actOrderList(_ context.Context, uid string, _ *webagents.ActionRequest) (any, error) {
	return map[string]any{"orders": s.store.Orders(uid)}, nil
}
