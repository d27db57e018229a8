<?php
header('Location: ' . ($_GET['to'] ?? '/index.html'));
