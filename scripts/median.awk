# median(list): the median of the numbers in a space-separated string (the benchmark scripts' summaries).
function median(list,   n, a, i, j, t) {
  n = split(list, a, " ");
  for (i = 1; i <= n; ++i) for (j = i + 1; j <= n; ++j) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
  return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
