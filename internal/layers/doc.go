// Package layers holds no code: its test keeps oz0's floors as docs/development.md draws them
// (each top-level folder imports only folders on the floors below it), the Go SDKs free of the
// node, and the CLI out of the dev server's insides.
package layers
