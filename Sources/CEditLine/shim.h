// Debian's libedit-dev: the readline-compatible line editor (BSD licence) used by `couchette shell`.
#include <stdio.h>
#include <stdlib.h>
#include <editline/readline.h>
