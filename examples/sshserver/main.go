// Command sshserver is an SSH server that refuses keys a pkbf filter says
// are probably compromised, before its own check of authorized keys:
//
//	sshserver FILTER HOST-KEY AUTHORIZED-KEYS ADDR
//
// HOST-KEY is an OpenSSH private key without a passphrase
// (ssh-keygen -t ed25519 -N "" -f host); AUTHORIZED-KEYS holds the keys
// that may log in, one per line, as sshd's file does. The filter file is
// followed as pkbf update renames new ones over it. A client that logs in
// and runs a command gets a greeting; each refusal is logged with the
// key's fingerprint.
package main

import (
	"errors"
	"fmt"
	"log"
	"net"
	"os"

	"golang.org/x/crypto/ssh"

	"github.com/pkbf/pkbf"
	"github.com/pkbf/pkbf/keycheck"
	"github.com/pkbf/pkbf/pkbfssh"
)

func main() {
	if len(os.Args) != 5 {
		log.Fatal("usage: sshserver FILTER HOST-KEY AUTHORIZED-KEYS ADDR")
	}
	filter, err := pkbf.OpenLive(os.Args[1], pkbf.LiveOptions{OnError: func(err error) { log.Print(err) }})
	if err != nil {
		log.Fatal(err)
	}
	defer filter.Close()
	hostPEM, err := os.ReadFile(os.Args[2])
	if err != nil {
		log.Fatal(err)
	}
	hostKey, err := ssh.ParsePrivateKey(hostPEM)
	if err != nil {
		log.Fatalf("%s: %v", os.Args[2], err)
	}
	authorized, err := readAuthorizedKeys(os.Args[3])
	if err != nil {
		log.Fatal(err)
	}

	// The server's own decision: is the key listed?
	config := &ssh.ServerConfig{
		PublicKeyCallback: func(conn ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if authorized[string(key.Marshal())] {
				return nil, nil
			}
			return nil, fmt.Errorf("user %s: key %s is not authorized", conn.User(), ssh.FingerprintSHA256(key))
		},
		AuthLogCallback: func(conn ssh.ConnMetadata, method string, err error) {
			if errors.Is(err, pkbfssh.ErrCompromised) || errors.Is(err, pkbf.ErrFileChanged) {
				log.Printf("refused: %v", err) // names the key's SHA256: fingerprint
			}
		},
	}
	config.AddHostKey(hostKey)
	// Last: in the copy, the filter comes first in every step that takes a
	// key, so a compromised key never reaches the callback above.
	config = pkbfssh.ServerConfig(config, keycheck.New(filter, keycheck.Options{}))

	ln, err := net.Listen("tcp", os.Args[4])
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("listening on %s", ln.Addr())
	for {
		c, err := ln.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go serve(c, config)
	}
}

// readAuthorizedKeys reads the keys of an authorized_keys file.
func readAuthorizedKeys(path string) (map[string]bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	keys := map[string]bool{}
	for len(data) > 0 {
		key, _, _, rest, err := ssh.ParseAuthorizedKey(data)
		if err != nil {
			break // no more keys
		}
		keys[string(key.Marshal())] = true
		data = rest
	}
	return keys, nil
}

// serve answers one connection: a greeting to each command run.
func serve(c net.Conn, config *ssh.ServerConfig) {
	defer c.Close()
	conn, chans, reqs, err := ssh.NewServerConn(c, config)
	if err != nil {
		return // a refused key ends here; the callback logged it
	}
	defer conn.Close()
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			nc.Reject(ssh.UnknownChannelType, "sessions only")
			continue
		}
		ch, requests, err := nc.Accept()
		if err != nil {
			return
		}
		go func() {
			defer ch.Close()
			for r := range requests {
				r.Reply(r.Type == "exec", nil)
				if r.Type == "exec" {
					fmt.Fprintf(ch, "hello, %s\n", conn.User())
					ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{0}))
					return
				}
			}
		}()
	}
}
