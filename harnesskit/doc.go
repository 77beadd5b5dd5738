// Package harnesskit is the oz0 harness protocol, version 1, in Go: its messages, their line
// codec, and the events and ends of a session as a node records them. docs/protocol.md is the
// protocol for harness authors; the JSON Schemas of its messages are in package schemas
// (SchemaFor). harnesskit/harness is the SDK for harnesses written in Go and harnesskit/hook the
// SDK for plugin hooks: both import this package and nothing of the node, so a harness binary
// carries the protocol alone. The node side, which starts and supervises a session, is package
// supervisor.
package harnesskit
