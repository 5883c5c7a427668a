package cuex

import "context"

// Pool lends a fixed number of Engines to work that runs in parallel (the
// controller's workers, the webhook's admission reviews). An Engine keeps
// what it compiled from one loan to the next, so a template is compiled
// once per Engine, not once per piece of work; it forgets the values it
// evaluated when it is given back (Forget).
type Pool struct {
	engines chan *Engine
}

// NewPool returns a Pool of size Engines (at least 1), each made with opts
// (share a Memo and an Abandoned count between pools with WithMemo and
// WithAbandoned).
func NewPool(size int, opts ...Option) *Pool {
	size = max(size, 1)
	p := &Pool{engines: make(chan *Engine, size)}
	for range size {
		p.engines <- NewEngine(opts...)
	}
	return p
}

// Get waits for a free Engine; it fails only when ctx ends first. Give it
// back with Put.
func (p *Pool) Get(ctx context.Context) (*Engine, error) {
	select {
	case e := <-p.engines:
		return e, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// Put gives back an Engine that Get lent, once its work is done.
func (p *Pool) Put(e *Engine) {
	e.Forget()
	p.engines <- e
}
