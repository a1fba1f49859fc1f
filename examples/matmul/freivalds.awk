# Freivalds' check that C = A·B, run by the buyer on the job's output without redoing the product:
#   awk -f examples/matmul/freivalds.awk examples/matmul/a.txt examples/matmul/b.txt out/c.txt
# Each round draws x in {0,1}^n and compares C·x with A·(B·x): O(n²) per round instead of the O(n³) product.
# A wrong C passes one round with probability at most 1/2, so all k rounds with at most 2^-k (default k = 40).
# Options: -v rounds=K, -v seed=S (default: awk's time-based seed). Exit 0: passed; 1: C is not A·B; 2: bad input.
# Matrices are rows of whitespace-separated integers, one row per line; blank lines are ignored.
BEGIN {
  if (rounds == "") rounds = 40
  if (seed == "") srand(); else srand(seed)
}
FNR == 1 { file++ }
NF == 0 { next }
{
  if (file > 3) { bad("give three files: A, B and C") }
  row[file]++
  if (cols[file] == "") cols[file] = NF
  else if (cols[file] != NF) bad(FILENAME ": row " row[file] " has " NF " entries, the first row has " cols[file])
  for (j = 1; j <= NF; j++) {
    if ($j !~ /^-?[0-9]+$/) bad(FILENAME ": row " row[file] ", column " j ": \"" $j "\" is not an integer")
    m[file, row[file], j] = $j + 0
  }
}
END {
  if (failed) exit 2
  if (file != 3) bad("give three files: A, B and C")
  n = row[1]; k = cols[1]; p = cols[2]
  if (row[2] != k) bad("A is " n "×" k " but B has " row[2] " rows")
  if (row[3] != n || cols[3] != p) bad("C is " row[3] "×" cols[3] ", A·B is " n "×" p)
  for (r = 1; r <= rounds; r++) {
    for (j = 1; j <= p; j++) x[j] = int(rand() * 2)
    for (i = 1; i <= k; i++) { s = 0; for (j = 1; j <= p; j++) s += m[2, i, j] * x[j]; bx[i] = s }
    for (i = 1; i <= n; i++) {
      abx = 0; for (j = 1; j <= k; j++) abx += m[1, i, j] * bx[j]
      cx = 0; for (j = 1; j <= p; j++) cx += m[3, i, j] * x[j]
      if (abx != cx) {
        printf "FAILED: round %d: row %d of C·x is %d, of A·(B·x) %d: C is not A·B\n", r, i, cx, abx
        exit 1
      }
    }
  }
  printf "ok: C = A·B (%d×%d) passed %d Freivalds rounds; a wrong C passes with probability at most 2^-%d\n", n, p, rounds, rounds
}
function bad(msg) {
  print "freivalds.awk: " msg > "/dev/stderr"
  failed = 1
  exit 2
}
