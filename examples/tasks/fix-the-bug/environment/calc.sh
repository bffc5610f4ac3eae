#!/bin/sh
# Prints the product of its two arguments.
echo $(( $1 + $2 ))
