<?php

echo "hello world!";