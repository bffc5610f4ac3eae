#!/usr/bin/env node
// The `berth` command: a committed shim, so npm links it at install time, before the build.
import '../dist/bin.js';
