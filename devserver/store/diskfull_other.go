//go:build !unix

package store

func freeSpace(string) int64 { return -1 }
