#!/bin/bash
echo "no-reef-receipt" > /app/receipt.txt
