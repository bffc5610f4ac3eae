module berth.test/sni-gate

go 1.22
