// The upstream contract (README.md) with Node's http module:
//   node tests/proxy/node_app.js PORT
'use strict';
const http = require('http');
const crypto = require('crypto');

const PATTERN = Buffer.from('0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ');
const PIECE = 64 * 1024;
// Byte i of a /size body is PATTERN[i % 62]: a piece that starts at offset
// off is BLOCK[off % 62:][:len].
const BLOCK = Buffer.alloc(PIECE + 2 * PATTERN.length);
for (let i = 0; i < BLOCK.length; i++) BLOCK[i] = PATTERN[i % PATTERN.length];

function reply(res, code, body, ctype = 'text/plain', extra = []) {
	res.statusCode = code;
	res.setHeader('Content-Type', ctype);
	for (const [k, v] of extra) res.setHeader(k, v);
	if (code === 204 || code === 304) return res.end();
	const buf = Buffer.from(body);
	res.setHeader('Content-Length', buf.length);
	res.end(buf);
}

// Writes n pattern bytes piece by piece, waiting for 'drain' when the
// socket is behind, so a 100 MiB body never sits in memory.
function sendPattern(res, n) {
	let off = 0;
	const more = () => {
		while (off < n) {
			const k = Math.min(PIECE, n - off);
			const start = off % PATTERN.length;
			off += k;
			if (!res.write(BLOCK.subarray(start, start + k))) return res.once('drain', more);
		}
		res.end();
	};
	res.on('close', () => { off = n; });	// client gone: stop
	more();
}

function handle(req, res) {
	const url = new URL(req.url, 'http://x');
	const path = url.pathname;
	const q = url.searchParams;

	if (path.startsWith('/size/')) {
		if (req.method !== 'GET' && req.method !== 'HEAD') return reply(res, 405, 'method not allowed\n');
		const s = path.slice(6), d = q.get('delay_ms') || '0';
		if (!/^\d+$/.test(s) || !/^\d+$/.test(d)) return reply(res, 400, 'bad size\n');
		const n = Number(s);
		setTimeout(() => {
			res.setHeader('Content-Type', 'application/octet-stream');
			if (q.get('chunked') === '1') res.setHeader('Transfer-Encoding', 'chunked'); // each write one chunk
			else res.setHeader('Content-Length', n);
			if (req.method === 'HEAD') return res.end();
			sendPattern(res, n);
		}, Number(d));
		return;
	}
	if (path === '/sha256') {
		if (req.method !== 'POST' && req.method !== 'PUT') return reply(res, 405, 'method not allowed\n');
		const h = crypto.createHash('sha256');
		let count = 0;
		req.on('data', (d) => { h.update(d); count += d.length; });
		req.on('end', () => reply(res, 200, `${h.digest('hex')} ${count}\n`));
		return;
	}
	if (path === '/echo' || path.startsWith('/echo/')) {
		let bodyLen = 0;
		req.on('data', (d) => { bodyLen += d.length; });
		req.on('end', () => {
			const headers = [];	// rawHeaders: every field, in order, as received
			for (let i = 0; i < req.rawHeaders.length; i += 2)
				headers.push([req.rawHeaders[i].toLowerCase(), req.rawHeaders[i + 1]]);
			const doc = { method: req.method, path: req.url, headers, body_len: bodyLen };
			reply(res, 200, JSON.stringify(doc) + '\n', 'application/json');
		});
		return;
	}
	if (path.startsWith('/status/')) {
		const s = path.slice(8), code = Number(s);
		if (!/^\d+$/.test(s) || code < 200 || code > 599) return reply(res, 400, 'bad status\n');
		return reply(res, code, `status ${code}\n`);
	}
	if (path === '/set-cookie')
		return reply(res, 200, 'two cookies\n', 'text/plain',
			[['Set-Cookie', ['a=1; Path=/', 'b=2; Path=/; HttpOnly']]]);
	reply(res, 404, 'not found\n');
}

const port = Number(process.argv[2]);
const server = http.createServer(handle);
server.requestTimeout = 0;	// a 100 MiB upload may take a while
server.listen(port, '127.0.0.1');
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => process.exit(0));
