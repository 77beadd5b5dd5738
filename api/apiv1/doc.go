// Package apiv1 is the wire vocabulary of the dev server's control API, version 1 (the calls under
// /api/v1/): the JSON bodies the server writes and its clients read, and OZ0_CONTEXT, which says
// where the server is and carries its bearer token.
//
// The types here are the contract, not the server's records: the server converts its store's
// structs into them, so the store can change without a client noticing. JSON field names are
// stable; a new field may be added, one is never renamed or given another meaning. Times are
// RFC 3339 in UTC; a zero time is left out where a field says omitzero.
//
// Every call answers JSON. An error is an ErrorBody, {"error":{"code":"…","message":"…"}}, with a
// fitting HTTP status; the message is one line meant for a person. A job's live stream
// (GET /api/v1/jobs/{id}/events) is server-sent events: each event's id is its Seq, its event
// name its Type and its data the Event as JSON (Event.AppendJSON writes it); after the job's last
// event comes `event: end`.
//
// The package imports nothing of oz0, so any client (the CLI, a script, a web UI) can use it.
package apiv1
