//go:build unix

package pkbfssh

import "log/syslog"

func openSyslog(tag string) (syslogWriter, error) {
	return syslog.New(syslog.LOG_AUTH|syslog.LOG_WARNING, tag)
}
