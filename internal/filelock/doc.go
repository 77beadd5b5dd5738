// Package filelock is an exclusive lock between processes on a file beside what they change
// (flock): the tenant's secrets and its quotas, which oz0 dev and the CLI both write.
package filelock
