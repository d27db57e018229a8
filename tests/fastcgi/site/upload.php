<?php
header('Content-Type: text/plain');
foreach ($_FILES as $field => $f) {
	echo "$field ", $f['name'], " ", $f['size'], " ", $f['error'], " ",
		$f['error'] ? '-' : hash_file('sha256', $f['tmp_name']), "\n";
}
echo "raw ", strlen(file_get_contents('php://input')), "\n";
