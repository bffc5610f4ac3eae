// sni-gate: the Modal simulator's enforcement of an allowlist's domains, as Modal documents it
// (a domain is matched on the TLS server name of a connection to port 443). It runs in the
// sandbox's network namespace, in a container of its own holding NET_ADMIN there; the sandbox's
// packet filter redirects its TCP to port 443 here. A connection whose ClientHello names an
// allowed server goes on to its original destination (SO_ORIGINAL_DST), the ClientHello first, from
// a socket carrying the gate's mark (which the filter lets out, and which the sandbox, without
// NET_ADMIN, cannot set); any other is reset.
//
//	sni-gate -listen 127.0.0.1:0 -mark 443 -allow 'api.test,*.pypi.test'
package main

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

const soOriginalDst = 80 // linux/netfilter_ipv4.h

func main() {
	listen := flag.String("listen", "127.0.0.1:15443", "address to listen on")
	allow := flag.String("allow", "", "comma-separated domains: exact names, *.suffix, or *")
	mark := flag.Int("mark", 443, "SO_MARK of the gate's own connections")
	flag.Parse()
	dialer := &net.Dialer{Timeout: 10 * time.Second, Control: func(_, _ string, raw syscall.RawConn) error {
		var serr error
		if err := raw.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_MARK, *mark) }); err != nil {
			return err
		}
		return serr
	}}
	domains := strings.Split(strings.ToLower(*allow), ",")
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	// The simulator waits for this line before it writes the redirect.
	fmt.Fprintln(os.Stdout, "listening", ln.Addr())
	for {
		c, err := ln.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go serve(c.(*net.TCPConn), domains, dialer)
	}
}

func allowed(name string, domains []string) bool {
	name = strings.TrimSuffix(strings.ToLower(name), ".")
	for _, d := range domains {
		switch {
		case d == "":
		case d == "*":
			return true
		case strings.HasPrefix(d, "*."):
			if strings.HasSuffix(name, d[1:]) {
				return true
			}
		case name == d:
			return true
		}
	}
	return false
}

func serve(c *net.TCPConn, domains []string, dialer *net.Dialer) {
	defer c.Close()
	dst, err := originalDst(c)
	if err != nil {
		log.Printf("original destination: %v", err)
		return
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	hello, name, err := readClientHello(c)
	if err != nil || !allowed(name, domains) {
		log.Printf("refused %s (server name %q): %v", dst, name, err)
		c.SetLinger(0) // a reset, as a filtered connection gets
		return
	}
	c.SetReadDeadline(time.Time{})
	up, err := dialer.Dial("tcp", dst)
	if err != nil {
		log.Printf("%s: %v", dst, err)
		c.SetLinger(0)
		return
	}
	defer up.Close()
	if _, err := up.Write(hello); err != nil {
		return
	}
	done := make(chan struct{}, 2)
	go func() { io.Copy(up, c); up.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
	go func() { io.Copy(c, up); c.CloseWrite(); done <- struct{}{} }()
	<-done
	<-done
}

func originalDst(c *net.TCPConn) (string, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return "", err
	}
	var addr syscall.RawSockaddrInet4
	var serr error
	err = raw.Control(func(fd uintptr) {
		size := uint32(unsafe.Sizeof(addr))
		_, _, errno := syscall.Syscall6(syscall.SYS_GETSOCKOPT, fd, syscall.IPPROTO_IP, soOriginalDst,
			uintptr(unsafe.Pointer(&addr)), uintptr(unsafe.Pointer(&size)), 0)
		if errno != 0 {
			serr = errno
		}
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return "", err
	}
	port := binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&addr.Port))[:])
	return net.JoinHostPort(net.IP(addr.Addr[:]).String(), fmt.Sprint(port)), nil
}

// readClientHello reads one TLS handshake record (a ClientHello fits in one in practice) and
// returns its bytes and the server name it asks for ("" when it names none).
func readClientHello(r io.Reader) ([]byte, string, error) {
	head := make([]byte, 5)
	if _, err := io.ReadFull(r, head); err != nil {
		return nil, "", err
	}
	if head[0] != 0x16 {
		return nil, "", errors.New("not a TLS handshake")
	}
	body := make([]byte, binary.BigEndian.Uint16(head[3:5]))
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, "", err
	}
	name, err := serverName(body)
	return append(head, body...), name, err
}

// serverName finds the server_name extension (RFC 6066) in a ClientHello handshake message.
func serverName(m []byte) (string, error) {
	p := &parser{b: m}
	if p.u8() != 1 { // client_hello
		return "", errors.New("not a ClientHello")
	}
	p.skip(3 + 2 + 32)        // length, version, random
	p.skip(int(p.u8()))       // session id
	p.skip(int(p.u16()))      // cipher suites
	p.skip(int(p.u8()))       // compression methods
	end := p.i + int(p.u16()) // extensions
	for p.ok() && p.i+4 <= end {
		typ, n := p.u16(), int(p.u16())
		if typ != 0 {
			p.skip(n)
			continue
		}
		p.u16()          // server_name_list length
		if p.u8() != 0 { // host_name
			break
		}
		name := p.take(int(p.u16()))
		if p.ok() {
			return string(name), nil
		}
	}
	if !p.ok() {
		return "", errors.New("a malformed ClientHello")
	}
	return "", errors.New("no server name")
}

type parser struct {
	b   []byte
	i   int
	bad bool
}

func (p *parser) ok() bool { return !p.bad }
func (p *parser) take(n int) []byte {
	if p.bad || n < 0 || p.i+n > len(p.b) {
		p.bad = true
		return nil
	}
	s := p.b[p.i : p.i+n]
	p.i += n
	return s
}
func (p *parser) skip(n int) { p.take(n) }
func (p *parser) u8() int {
	s := p.take(1)
	if s == nil {
		return -1
	}
	return int(s[0])
}
func (p *parser) u16() int {
	s := p.take(2)
	if s == nil {
		return -1
	}
	return int(binary.BigEndian.Uint16(s))
}
