//go:build !unix

package pkbfssh

import "errors"

func openSyslog(string) (syslogWriter, error) { return nil, errors.New("no syslog on this system") }
