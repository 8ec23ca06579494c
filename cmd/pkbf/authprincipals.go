package main

import (
	"errors"
	"io"
	"slices"
	"strings"

	"github.com/pkbf/pkbf/pkbfssh"
)

// pkbf authorized-principals is sshd's AuthorizedPrincipalsCommand: sshd
// runs it for a certificate signed by a CA of TrustedUserCAKeys (a path on
// which the AuthorizedKeysCommand never runs) and accepts the certificate
// only if one of its principals is a line of the output. It prints the
// user's name when the certificate names it among its principals and the
// filter holds neither the certified key nor the CA key; otherwise nothing.

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
	rest, code, ok := parseSSHDArgs(c, args, stdout)
	if !ok {
		return code
	}
	if len(rest) != 4 {
		_, code := c.fail("want FILTER USER KEYTYPE KEY (sshd's %u %t %k)")
		return code
	}
	a := &authKeys{filterPath: rest[0], user: rest[1], lg: newAuthLog(stderr, fl.syslog.value)}
	defer a.lg.close()
	cert, err := pkbfssh.ParseKey(rest[2], rest[3])
	if err == nil && cert.CA == nil {
		err = errors.New("not a certificate")
	}
	if err != nil {
		a.lg.errorf("user %s: no certificate accepted: the key offered (%s): %s", a.user, shortComment(rest[2]), message(err))
		return authKeysFailed
	}
	// sshd reads each line of the output as "[options] principal", the
	// principal after the last blank; a name it would read otherwise is
	// never printed.
	if a.user == "" || strings.ContainsAny(a.user, " \t\r\n") || a.user[0] == '#' {
		a.lg.errorf("user %q: no certificate accepted: sshd would not read the name as one principal", a.user)
		return authKeysFailed
	}
	if !slices.Contains(cert.Principals, a.user) {
		a.lg.errorf("refused login of user %s with certificate %s: %s is not among its principals", a.user, cert.Fingerprint, a.user)
		return authKeysOK
	}
	f, err := openSSHDFilter(a.filterPath)
	if err == nil {
		defer f.Close()
		var held *pkbfssh.Key
		if held, err = cert.CompromisedKey(f); err == nil {
			err = f.FileChanged()
		}
		if err == nil && held != nil {
			a.lg.errorf("refused login of user %s with %s certificate %s", a.user, cert.Type, a.why(cert, held, ""))
			return authKeysOK
		}
	}
	if err != nil {
		if fl.fail.value != "open" {
			a.lg.errorf("user %s: no certificate accepted (--fail closed): %s", a.user, message(err))
			return authKeysFailed
		}
		a.lg.errorf("user %s: certificate passed on unchecked (--fail open): %s", a.user, message(err))
	}
	return a.print(stdout, []byte(a.user+"\n"))
}
