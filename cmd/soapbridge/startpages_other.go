//go:build !linux

package main

// releaseStartupPages is Linux only (startpages_linux.go).
func releaseStartupPages() (int64, error) { return 0, nil }
