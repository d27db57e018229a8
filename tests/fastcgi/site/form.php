<?php
header('Content-Type: text/plain');
ksort($_GET);
ksort($_POST);
echo "method ", $_SERVER['REQUEST_METHOD'], "\n";
foreach ($_GET as $k => $v) echo "get $k=$v\n";
foreach ($_POST as $k => $v) echo "post $k=$v\n";
echo "script ", $_SERVER['SCRIPT_NAME'], "\n";
echo "path_info ", $_SERVER['PATH_INFO'] ?? '-', "\n";
