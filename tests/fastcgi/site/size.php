<?php
// N bytes of a repeating pattern, written in pieces of `piece` bytes.
$n = isset($_GET['n']) ? (int)$_GET['n'] : 0;
$piece = isset($_GET['piece']) ? max(1, (int)$_GET['piece']) : 8192;
header('Content-Type: application/octet-stream');
$pattern = str_repeat('0123456789abcdefghijklmnopqrstuvwxyz', 300);
for ($off = 0; $off < $n; $off += $piece) {
	$len = min($piece, $n - $off);
	$s = '';
	while (strlen($s) < $len)
		$s .= substr($pattern, ($off + strlen($s)) % 36, $len - strlen($s));
	echo $s;
}
