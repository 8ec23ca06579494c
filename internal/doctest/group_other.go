//go:build !unix

package doctest

import "os/exec"

// killGroupOnCancel leaves cmd as it is: its context's end kills the
// shell alone.
func killGroupOnCancel(*exec.Cmd) {}
