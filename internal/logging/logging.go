// Package logging builds ltiop's logger from two settings, a level and a format, which
// are independent of dev mode (dev mode loosens URL checks; it says nothing about logs).
package logging

import (
	"fmt"
	"io"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
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

// New returns a logger writing to w at level, in format.
func New(level, format string, w io.Writer) (logr.Logger, error) {
	if err := Check(level, format); err != nil {
		return logr.Discard(), err
	}
	lvl, _ := zapLevel(level)
	isoTime := func(c *zapcore.EncoderConfig) { c.EncodeTime = zapcore.ISO8601TimeEncoder }
	encoder := zap.JSONEncoder(isoTime)
	if format == FormatConsole {
		encoder = zap.ConsoleEncoder(isoTime)
	}
	return zap.New(zap.WriteTo(w), zap.Level(lvl), encoder), nil
}
