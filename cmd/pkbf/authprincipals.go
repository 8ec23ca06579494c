package main

import (
	"io"

	"github.com/pkbf/pkbf/internal/perr"
	"github.com/pkbf/pkbf/pkbfssh"
)

// pkbf authorized-principals is sshd's AuthorizedPrincipalsCommand, for
// certificates signed by a CA of TrustedUserCAKeys (sshd never runs the
// AuthorizedKeysCommand for those): pkbfssh.Gate.AuthorizedPrincipals.

type authPrincipalsFlags struct{ fail, syslog choiceFlag }

func (fl *authPrincipalsFlags) command(stdout, stderr io.Writer) *command {
	c := newCommand("authorized-principals", "authorized-principals [flags] FILTER [--] USER KEYTYPE KEY", stdout, stderr)
	fl.fail, fl.syslog = failFlag(), syslogFlag()
	c.Var(&fl.fail, "fail", "when the filter cannot be read: `closed` prints nothing (no certificate logs in), open prints the user's name unchecked")
	c.Var(&fl.syslog, "syslog", "also log to syslog (auth facility), as sshd does: `auto` when a syslog socket exists, on, off")
	return c
}

func runAuthPrincipals(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	var fl authPrincipalsFlags
	c := fl.command(stdout, stderr)
	if ok, code := c.parse(args, 0, -1); !ok {
		return code
	}
	rest := c.Args()
	if len(rest) != 4 {
		return c.fail("want FILTER USER KEYTYPE KEY (sshd's %u %t %k)")
	}
	lg := pkbfssh.NewLog(stderr, "pkbf", fl.syslog.value)
	defer lg.Close()
	cert, err := pkbfssh.ParseKey(rest[2], rest[3])
	if err != nil {
		return sshdExit(lg, perr.Errorf("user %s: no certificate accepted: the key offered (%s): %w", rest[1], pkbfssh.ShortComment(rest[2]), err))
	}
	g := &pkbfssh.Gate{Filter: rest[0], FailOpen: fl.fail.value == "open", Log: lg.Log}
	return sshdExit(lg, g.AuthorizedPrincipals(stdout, rest[1], cert))
}
