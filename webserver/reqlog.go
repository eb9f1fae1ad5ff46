package webserver

import (
	"slices"
	"sync"

	"github.com/go-logr/logr"
)

// requestLogger is base with the request's id, paid for only when something is logged:
// zap encodes the values of WithValues at once (a copy of its encoder per request), while
// almost every request logs nothing at the production level.
func requestLogger(base logr.Logger, id string) logr.Logger {
	sink := base.GetSink()
	if sink == nil {
		return base
	}
	if cd, ok := sink.(logr.CallDepthLogSink); ok {
		sink = cd.WithCallDepth(1) // the lazy sink's own frame
	}
	return logr.New(&lazySink{base: sink, kv: []any{"requestId", id}})
}

// lazySink adds kv to base on first use. Enabled asks base directly: a V(1) check costs
// no WithValues.
type lazySink struct {
	base logr.LogSink
	kv   []any

	once  sync.Once
	bound logr.LogSink
}

func (s *lazySink) sink() logr.LogSink {
	s.once.Do(func() { s.bound = s.base.WithValues(s.kv...) })
	return s.bound
}

// Init does nothing: base was initialised by the logger it came from.
func (s *lazySink) Init(logr.RuntimeInfo) {}

func (s *lazySink) Enabled(level int) bool { return s.base.Enabled(level) }

func (s *lazySink) Info(level int, msg string, kv ...any) { s.sink().Info(level, msg, kv...) }

func (s *lazySink) Error(err error, msg string, kv ...any) { s.sink().Error(err, msg, kv...) }

func (s *lazySink) WithValues(kv ...any) logr.LogSink {
	return &lazySink{base: s.base, kv: append(slices.Clip(s.kv), kv...)}
}

func (s *lazySink) WithName(name string) logr.LogSink {
	return &lazySink{base: s.base.WithName(name), kv: s.kv}
}
