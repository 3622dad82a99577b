// Package framework is the scheduler's plugin framework, cut along kube-scheduler's seams:
// the per-pod and per-node data plugins read (PodInfo, NodeInfo), the extension points
// (PreFilter, Filter, PostFilter, PreScore, Score, Reserve, Bind), a profile that runs them,
// and the Status plugins answer with.
package framework

import (
	"errors"
	"strings"
)

// Code says how a plugin's answer counts.
type Code int

const (
	// Success: the pod may go on.
	Success Code = iota
	// Error: an internal error; the pod is retried with back-off.
	Error
	// Unschedulable: the node does not fit now; preemption may help.
	Unschedulable
	// UnschedulableAndUnresolvable: the node does not fit and preemption cannot change that.
	UnschedulableAndUnresolvable
	// Skip: at PreFilter or PreScore, this plugin has nothing to check for the pod.
	Skip
)

// Status is a plugin's answer; nil means Success.
type Status struct {
	code    Code
	reasons []string
	err     error
	plugin  string
}

// NewStatus makes a Status with reasons worded as kube-scheduler's.
func NewStatus(code Code, reasons ...string) *Status {
	return &Status{code: code, reasons: reasons}
}

// AsStatus wraps an internal error.
func AsStatus(err error) *Status {
	if err == nil {
		return nil
	}
	return &Status{code: Error, reasons: []string{err.Error()}, err: err}
}

// Code is the status's code (Success for nil).
func (s *Status) Code() Code {
	if s == nil {
		return Success
	}
	return s.code
}

// IsSuccess is true for nil and Success.
func (s *Status) IsSuccess() bool { return s.Code() == Success }

// IsSkip is true for Skip.
func (s *Status) IsSkip() bool { return s.Code() == Skip }

// IsRejected is true when the pod does not fit (not for internal errors).
func (s *Status) IsRejected() bool {
	c := s.Code()
	return c == Unschedulable || c == UnschedulableAndUnresolvable
}

// Reasons are the human-readable reasons.
func (s *Status) Reasons() []string {
	if s == nil {
		return nil
	}
	return s.reasons
}

// Message joins the reasons.
func (s *Status) Message() string {
	if s == nil {
		return ""
	}
	return strings.Join(s.reasons, ", ")
}

// Plugin names the plugin that answered.
func (s *Status) Plugin() string {
	if s == nil {
		return ""
	}
	return s.plugin
}

// WithPlugin records which plugin answered.
func (s *Status) WithPlugin(name string) *Status {
	if s != nil {
		s.plugin = name
	}
	return s
}

// AsError is the status as an error (nil for success and rejections).
func (s *Status) AsError() error {
	if s.Code() != Error {
		return nil
	}
	if s.err != nil {
		return s.err
	}
	return errors.New(s.Message())
}
