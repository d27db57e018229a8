<?php
http_response_code(isset($_GET['code']) ? (int)$_GET['code'] : 418);
header('X-Probe: status');
header('Content-Type: text/plain');
echo "status page\n";
