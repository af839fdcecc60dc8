# N* against L: S_3, code_trace(every=3), uniform (induct report)
set title "N* against L: S_3, code_trace(every=3), uniform" noenhanced
set xlabel "L (maximum length)"
set ylabel "N* (training sequences)"
set logscale y
set ytics 10
set mytics 10
set format y '10^{%T}'
set key top left noenhanced
set grid
set xtics 1
set xrange [4-0.5:4+0.5]
set yrange [0.5:*]
set terminal pngcairo size 960,600
set output "nstar_permutation_m_3__code_trace_every_3__uniform.png"
plot "nstar_permutation_m_3__code_trace_every_3__uniform.dat" index 0 with linespoints lw 2 pointsize 1.6 pointtype 7 dashtype 1 lc 1 title "deltanet 2L d32", "nstar_permutation_m_3__code_trace_every_3__uniform.dat" index 1 with points pointsize 2.5 pointtype 4 lc 2 title "gpt2 2L d64: not learned (at N_max)", "nstar_permutation_m_3__code_trace_every_3__uniform.dat" index 2 with points pointsize 2.5 pointtype 8 lc 3 title "gru 64: not learned (at N_max)", "nstar_permutation_m_3__code_trace_every_3__uniform.dat" index 3 with points pointsize 2.5 pointtype 12 lc 4 title "lstm 64: not learned (at N_max)", "nstar_permutation_m_3__code_trace_every_3__uniform.dat" index 4 with points pointsize 2.5 pointtype 10 lc 5 title "mamba2 2L d32: not learned (at N_max)", "nstar_permutation_m_3__code_trace_every_3__uniform.dat" index 5 with lines dashtype 3 lc 'gray40' title "sequences available (N_max)"
set terminal svg size 960,600
set output "nstar_permutation_m_3__code_trace_every_3__uniform.svg"
plot "nstar_permutation_m_3__code_trace_every_3__uniform.dat" index 0 with linespoints lw 2 pointsize 1.6 pointtype 7 dashtype 1 lc 1 title "deltanet 2L d32", "nstar_permutation_m_3__code_trace_every_3__uniform.dat" index 1 with points pointsize 2.5 pointtype 4 lc 2 title "gpt2 2L d64: not learned (at N_max)", "nstar_permutation_m_3__code_trace_every_3__uniform.dat" index 2 with points pointsize 2.5 pointtype 8 lc 3 title "gru 64: not learned (at N_max)", "nstar_permutation_m_3__code_trace_every_3__uniform.dat" index 3 with points pointsize 2.5 pointtype 12 lc 4 title "lstm 64: not learned (at N_max)", "nstar_permutation_m_3__code_trace_every_3__uniform.dat" index 4 with points pointsize 2.5 pointtype 10 lc 5 title "mamba2 2L d32: not learned (at N_max)", "nstar_permutation_m_3__code_trace_every_3__uniform.dat" index 5 with lines dashtype 3 lc 'gray40' title "sequences available (N_max)"
