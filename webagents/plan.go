package webagents

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/bits"
)

// Plan is a checked batch, ready to execute: every action is published and
// in scope, every literal input matches its action's inputSchema, and the
// dependency graph, with the inferred edges added, is acyclic.
//
// A Plan is immutable and may be executed more than once.
type Plan struct {
	// Operations are the batch's operations in list order.
	Operations []PlannedOperation
	// Pacing is the effective pacing: the manifest's, tightened (never
	// loosened) by the batch's own.
	Pacing Pacing
}

// PlannedOperation is one operation of a [Plan].
type PlannedOperation struct {
	ID     string
	Action *Action
	// Input is the raw input; references are resolved when the operation runs.
	Input json.RawMessage
	// HasReferences reports whether Input holds {"$ref": …} objects.
	HasReferences bool

	deps uint64 // direct dependencies, explicit and inferred, as list indexes
	// tree is Input decoded, for an operation with references: the
	// executor resolves them from it instead of decoding Input again. It
	// is only read, so a Plan may run more than once, concurrently. When
	// the references were read from the text instead (rawRefs), tree is
	// nil and refText is a copy of Input as it was planned.
	tree    any
	refText []byte
}

// NewPlan checks a decoded batch against a manifest and plans it.
//
// path is the page path actions must be in scope for; "" skips scoping
// (pathPrefixes is a relevance filter, not authorization).
//
// Dependencies of an operation are its dependsOn, every operation it
// references, and the most recent earlier operation whose effect is not
// read, so writes run in list order and a read after a write waits for it.
// A write also waits for the reads listed before it, except a read that
// depends, directly or through others, on that write.
//
// Errors are *[Error] values: too_many_operations, unknown_action,
// references_disabled, unresolved_reference (a malformed "$ref"),
// invalid_graph (unknown id, self-dependency, cycle) and invalid_input (a
// literal input failing its schema; Operation names it).
func NewPlan(m *Manifest, path string, b *Batch) (*Plan, error) {
	n := len(b.Operations)
	if n == 0 {
		return nil, errorf(CodeInvalidRequest, "The batch needs at least one operation.")
	}
	if n > m.Workflow.MaxOperations || n > MaxOperationsLimit {
		return nil, errorf(CodeTooManyOperations, fmt.Sprintf("This site accepts at most %d operations per batch.", m.Workflow.MaxOperations))
	}
	p := &Plan{Operations: make([]PlannedOperation, n), Pacing: effectivePacing(m.Workflow, b.Pacing)}
	if path != "" {
		path = normalizePath(path)
	}
	lastWrite := -1
	for i := range b.Operations {
		op := &b.Operations[i]
		po := &p.Operations[i]
		po.ID, po.Input = op.ID, op.Input
		if len(po.Input) == 0 {
			po.Input = json.RawMessage("{}")
		}
		po.Action = m.Actions[op.Action]
		if po.Action == nil {
			return nil, opErrorf(CodeUnknownAction, op.ID, "This site does not publish that action.")
		}
		if path != "" && !po.Action.InScope(path) {
			return nil, opErrorf(CodeUnknownAction, op.ID, "That action is not available on this page.")
		}
		for _, d := range op.DependsOn {
			j := b.index(d)
			switch {
			case j < 0:
				return nil, opErrorf(CodeInvalidGraph, op.ID, "dependsOn names an unknown operation.")
			case j == i:
				return nil, opErrorf(CodeInvalidGraph, op.ID, "An operation cannot depend on itself.")
			}
			po.deps |= 1 << j
		}
		if mayHaveRefs(po.Input) {
			if err := p.addRefs(m, b, i); err != nil {
				return nil, err
			}
		}
		if lastWrite >= 0 {
			po.deps |= 1 << lastWrite
		}
		if po.Action.Effect != EffectRead {
			lastWrite = i
		}
	}
	var ancBuf [MaxOperationsLimit]uint64
	anc, ok := p.ancestorsInto(ancBuf[:len(p.Operations)])
	if !ok {
		return nil, errorf(CodeInvalidGraph, "The operations' dependencies form a cycle.")
	}
	p.addReadBeforeWriteEdges(anc)
	for i := range p.Operations {
		po := &p.Operations[i]
		if po.Action.input == nil || po.HasReferences {
			continue
		}
		if problems := validateInput(po.Action.input, po.Input); len(problems) > 0 {
			return nil, opErrorf(CodeInvalidInput, po.ID, inputProblemMessage(problems))
		}
	}
	return p, nil
}

func inputProblemMessage(problems []Problem) string {
	msg := "The input does not match the action's inputSchema: " + problems[0].String()
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	return msg
}

func (b *Batch) index(id string) int {
	for i := range b.Operations {
		if b.Operations[i].ID == id {
			return i
		}
	}
	return -1
}

func (p *Plan) addRefs(m *Manifest, b *Batch, i int) error {
	po := &p.Operations[i]
	tree := b.refTree(i)
	// The references' operations are looked up in the same walk that
	// counts and checks them; they are used once the checks have passed.
	targets := refTargets{b: b, self: i, id: po.ID}
	var (
		n   int
		ok  bool
		raw bool
	)
	if tree == nil {
		if n, ok, _, raw = rawRefOperations(po.Input, &targets); !raw {
			targets = refTargets{b: b, self: i, id: po.ID}
			var err error
			if tree, err = decodeTree(po.Input); err != nil {
				return opErrorf(CodeInvalidRequest, po.ID, "The input is not valid JSON.")
			}
		}
	}
	if !raw {
		onHeap := targets // a method value escapes: keep targets on the stack
		n, ok = refOperations(tree, onHeap.add)
		targets = onHeap
	}
	if n == 0 {
		return nil
	}
	if !m.Workflow.References {
		return opErrorf(CodeReferencesDisabled, po.ID, "This site does not accept $ref references.")
	}
	if !ok {
		return opErrorf(CodeUnresolvedReference, po.ID, `A "$ref" must be "opId" or "opId.path" with non-empty segments.`)
	}
	po.HasReferences = true
	if raw {
		po.refText = bytes.Clone(po.Input)
	} else {
		po.tree = tree
	}
	po.deps |= targets.deps
	return targets.err
}

// refTargets adds the operations an input references to its dependencies.
type refTargets struct {
	b    *Batch
	self int    // the operation's index
	id   string // and id
	deps uint64
	err  error // the first reference to an unknown operation or to itself
}

func (t *refTargets) add(op string) {
	j := t.b.index(op)
	switch {
	case t.err != nil:
	case j < 0:
		t.err = opErrorf(CodeInvalidGraph, t.id, "A $ref names an unknown operation.")
	case j == t.self:
		t.err = opErrorf(CodeInvalidGraph, t.id, "An operation cannot reference itself.")
	default:
		t.deps |= 1 << j
	}
}

// ancestors returns, for each operation, the set of operations it depends on
// directly or transitively; ok is false when the graph has a cycle.
func (p *Plan) ancestors() (anc []uint64, ok bool) {
	return p.ancestorsInto(make([]uint64, len(p.Operations)))
}

// ancestorsInto is ancestors written into anc, of the plan's length.
func (p *Plan) ancestorsInto(anc []uint64) ([]uint64, bool) {
	n := len(p.Operations)
	clear(anc)
	var done uint64
	for progress := true; progress; {
		progress = false
		for i := range p.Operations {
			d := p.Operations[i].deps
			if done&(1<<i) != 0 || d&^done != 0 {
				continue
			}
			a := d
			for rest := d; rest != 0; rest &= rest - 1 {
				a |= anc[bits.TrailingZeros64(rest)]
			}
			anc[i] = a
			done |= 1 << i
			progress = true
		}
	}
	return anc, done == 1<<n-1
}

// addReadBeforeWriteEdges makes each write wait for the reads listed before
// it, except a read that depends on the write: explicit edges win, so no
// cycle can appear.
func (p *Plan) addReadBeforeWriteEdges(anc []uint64) {
	for j := range p.Operations {
		w := &p.Operations[j]
		if w.Action.Effect == EffectRead {
			continue
		}
		var add uint64
		for i := 0; i < j; i++ {
			if p.Operations[i].Action.Effect == EffectRead && anc[i]&(1<<j) == 0 && w.deps&(1<<i) == 0 {
				add |= 1 << i
			}
		}
		if add != 0 {
			w.deps |= add
			anc, _ = p.ancestorsInto(anc)
		}
	}
}

// DependsOn returns the ids of the operations the i-th operation waits for
// directly, explicit and inferred, in list order. Clients send it as the
// operation's dependsOn.
func (p *Plan) DependsOn(i int) []string {
	d := p.Operations[i].deps
	if d == 0 {
		return nil
	}
	out := make([]string, 0, bits.OnesCount64(d))
	for rest := d; rest != 0; rest &= rest - 1 {
		out = append(out, p.Operations[bits.TrailingZeros64(rest)].ID)
	}
	return out
}

func effectivePacing(w Workflow, requested *Pacing) Pacing {
	p := w.Pacing
	if p.MaxConcurrency < 1 {
		p.MaxConcurrency = 1
	}
	if !w.Parallel {
		p.MaxConcurrency = 1
	}
	if requested != nil {
		p.MinIntervalMs = max(p.MinIntervalMs, min(requested.MinIntervalMs, MaxMinIntervalMs))
		if requested.MaxConcurrency >= 1 {
			p.MaxConcurrency = min(p.MaxConcurrency, requested.MaxConcurrency)
		}
	}
	return p
}
