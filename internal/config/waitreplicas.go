package config

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
)

// WaitReplicas is replayStoreWaitReplicas: "auto", the zero value and the default, or a
// number of Redis replicas given explicitly (0 turns WAIT off). Config.ReplayWaitReplicas
// says what auto comes to.
type WaitReplicas struct {
	N     int
	Given bool // N was set; false is auto
}

// WaitFor is n replicas, given explicitly.
func WaitFor(n int) WaitReplicas { return WaitReplicas{N: n, Given: true} }

// AutoWaitReplicas is the word that asks for the default.
const AutoWaitReplicas = "auto"

// Set reads "auto" or a whole number (a flag or an environment variable).
func (w *WaitReplicas) Set(s string) error {
	s = strings.TrimSpace(s)
	if s == AutoWaitReplicas {
		*w = WaitReplicas{}
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return errors.New(`replayStoreWaitReplicas: must be "auto" or a number of replicas, such as 1 (0: off)`)
	}
	*w = WaitFor(n)
	return nil
}

func (w *WaitReplicas) String() string {
	if !w.Given {
		return AutoWaitReplicas
	}
	return strconv.Itoa(w.N)
}

// UnmarshalJSON reads a number or "auto" (YAML: replayStoreWaitReplicas: 1, or auto).
func (w *WaitReplicas) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(b, &s) == nil {
		return w.Set(s)
	}
	var n int
	if err := json.Unmarshal(b, &n); err != nil {
		return errors.New(`replayStoreWaitReplicas: must be "auto" or a number of replicas, such as 1 (0: off)`)
	}
	*w = WaitFor(n)
	return nil
}

// MarshalJSON writes what UnmarshalJSON reads.
func (w WaitReplicas) MarshalJSON() ([]byte, error) {
	if !w.Given {
		return json.Marshal(AutoWaitReplicas)
	}
	return json.Marshal(w.N)
}

// ReplayWaitReplicas is how many Redis replicas must confirm each use before it counts: the
// number given, or for auto 1 when Sentinel finds the master and 0 otherwise. A Sentinel
// set-up has replicas to fail over to, and Redis replicates asynchronously: without WAIT a
// failover forgets the uses the old master acknowledged last, and they can be replayed.
// Behind one URL ltiop cannot tell whether there are replicas (memory has none).
func (c *Config) ReplayWaitReplicas() int {
	if w := c.ReplayStoreWaitReplicas; w.Given {
		return w.N
	}
	if c.ReplayStoreSentinelMaster != "" {
		return 1
	}
	return 0
}
