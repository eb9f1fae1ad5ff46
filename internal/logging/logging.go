// Package logging builds ltiop's logger from two settings, a level and a format, which
// are independent of dev mode (dev mode loosens URL checks; it says nothing about logs).
package logging

import (
	"fmt"
	"io"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	ctrlzap "sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// The accepted levels: debug adds the per-request lines (logr V(1)); error keeps errors only.
const (
	LevelDebug = "debug"
	LevelInfo  = "info"
	LevelError = "error"
)

// The accepted formats: one JSON object a line for collectors, or text for a terminal.
const (
	FormatJSON    = "json"
	FormatConsole = "console"
)

// Check reports whether level and format are accepted values.
func Check(level, format string) error {
	if _, err := zapLevel(level); err != nil {
		return err
	}
	switch format {
	case FormatJSON, FormatConsole:
		return nil
	}
	return fmt.Errorf("log format %q: must be json or console", format)
}

func zapLevel(level string) (zapcore.Level, error) {
	switch level {
	case LevelDebug:
		return zapcore.DebugLevel, nil
	case LevelInfo:
		return zapcore.InfoLevel, nil
	case LevelError:
		return zapcore.ErrorLevel, nil
	}
	return 0, fmt.Errorf("log level %q: must be debug, info or error", level)
}

// New returns a logger writing to w at level, in format. At info and error, repeated
// messages are sampled (the first 100 a second, then one in 100), so a flood of refused
// requests cannot flood the logs; at debug nothing is dropped, since debug is for
// following every request.
func New(level, format string, w io.Writer) (logr.Logger, error) {
	if err := Check(level, format); err != nil {
		return logr.Discard(), err
	}
	lvl, _ := zapLevel(level)
	var encoder zapcore.Encoder
	if format == FormatConsole {
		ec := zap.NewDevelopmentEncoderConfig()
		ec.EncodeTime = zapcore.RFC3339TimeEncoder
		encoder = zapcore.NewConsoleEncoder(ec)
	} else {
		ec := zap.NewProductionEncoderConfig()
		ec.EncodeTime = zapcore.RFC3339TimeEncoder
		encoder = zapcore.NewJSONEncoder(ec)
	}
	sink := zapcore.AddSync(w)
	// KubeAwareEncoder logs a Kubernetes object as its kind, namespace and name.
	core := zapcore.NewCore(&ctrlzap.KubeAwareEncoder{Encoder: encoder}, sink, lvl)
	if lvl > zapcore.DebugLevel {
		core = zapcore.NewSamplerWithOptions(core, time.Second, 100, 100)
	}
	return zapr.NewLogger(zap.New(core, zap.ErrorOutput(sink), zap.AddStacktrace(zapcore.ErrorLevel))), nil
}
