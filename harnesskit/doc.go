// Package harnesskit is the oz0 harness protocol, version 1, in Go: its messages, their line
// codec, and the events and ends of a session as a node records them. docs/protocol.md is the
// protocol for harness authors; the JSON Schemas of its messages are in package schemas
// (SchemaFor). harnesskit/harness is the SDK for harnesses written in Go (it imports this package)
// and harnesskit/hook the SDK for plugin hooks: neither imports anything of the node, so a
// harness's or a hook's binary carries the protocol alone. The node side, which starts and
// supervises a session, is package supervisor.
package harnesskit
