// Package fileio writes several buffers to a file at an offset in one system call where the OS
// has one (pwritev), without first gathering them into one buffer: a copy of every byte.
package fileio
