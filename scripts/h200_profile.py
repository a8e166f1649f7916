#!/usr/bin/env python3
"""Makes the H200 machine profile from the measurements in data/measured-h200/: writes
data/profiles/h200.json (the profile file, as `overlap-plan --profile` reads it) and
include/overlap/sim/machine/profiles/h200.hpp (the same profile built into the library, which the H100
and H200 presets use). tests/test_profile.cpp fails when the two differ.

usage: scripts/h200_profile.py   (from anywhere; rewrites both files)"""
import json
import pathlib
import statistics

root = pathlib.Path(__file__).resolve().parent.parent
data = root / 'data' / 'measured-h200'


def rows(name):
    return [json.loads(line) for line in (data / name).read_text().splitlines() if line.strip()]


gemms = [r for r in rows('gemm_sweep.jsonl') if r['what'] == 'gemm']
ms, ns, ks = (sorted({r[a] for r in gemms}) for a in 'mnk')
gemm_us = {(r['m'], r['n'], r['k']): r['us'] for r in gemms}
assert len(gemm_us) == len(ms) * len(ns) * len(ks), 'the sweep is not a full grid'

shapes = {'deepseek_v3': (7168, 2048), 'gpt_oss_120b': (2880, 2880)}  # hidden, expert FFN
grouped = []
for r in rows('grouped_gemm_permute.jsonl'):
    if r['what'] != 'grouped':
        continue
    hidden, ffn = shapes[r['model']]
    e, t = r['local_experts'], r['tokens_per_expert']
    grouped.append({'groups': e, 'm': t, 'n': 2 * ffn, 'k': hidden, 'us': r['fc1_us']})
    grouped.append({'groups': e, 'm': t, 'n': hidden, 'k': ffn, 'us': r['fc2_us']})

attention = []
attention_rows = rows('attention.jsonl')
for backend, name in (('CUDNN_ATTENTION', 'cudnn'), ('FLASH_ATTENTION', 'flash')):
    mine = {(r['seq'], r['heads']): r for r in attention_rows if r['backend'] == backend}
    seqs, heads = sorted({s for s, _ in mine}), sorted({h for _, h in mine})
    assert len(mine) == len(seqs) * len(heads), backend + ' is not a full grid'
    attention.append({'backend': name, 'head_dim': 128, 'seq': seqs, 'heads': heads,
                      'forward_us': [mine[s, h]['fwd_us'] for s in seqs for h in heads],
                      'backward_us': [mine[s, h]['bwd_us'] for s in seqs for h in heads]})

memory = rows('memory_and_clock.jsonl')
copy = next(r for r in memory if r['what'] == 'copy')
# The run's first second is the climb to the power limit; the rest is the sustained state.
sustained = [r for r in memory if r['what'] == 'sustained' and r['t'] >= 1.0]
concurrency = {r['pattern']: r for r in rows('concurrency.jsonl')
               if r.get('source', '').startswith('concur2') and r['cdmc'] == '1'}
packed = [r for r in rows('concurrency.jsonl') if r.get('source', '').startswith('concur2')
          and r['pattern'] == 'GC' and r['cdmc'] == '8']

profile = {
    'schema': 'overlap.profile',
    'version': 1,
    'gpu': 'NVIDIA H200',
    'source': 'measured on one H200 SXM (132 SMs, 141 GB HBM3e, 700 W), PyTorch 2.11 cu130 (cuBLAS via '
              'torch.matmul, torch._grouped_mm, SDPA), 2026-12-04; the rows are in data/measured-h200/',
    'sms': 132,
    'memory_bytes_per_us': round(copy['bytes'] / copy['us'], 1),
    'sustained_flops_per_us': round(statistics.median(r['tflops'] for r in sustained) * 1e6, 1),
    'sustained_clock_mhz': statistics.median(float(r['smi'].split()[0]) for r in sustained),
    'launch_us': 0,
    'event_record_us': 0,
    'gemm': {'m': ms, 'n': ns, 'k': ks, 'us': [gemm_us[m, n, k] for m in ms for n in ns for k in ks]},
    'grouped_gemm': grouped,
    'attention': attention,
    'concurrency': {
        'copy_ctas': concurrency['C']['blocks'],
        'copy_ctas_per_sm': -(-packed[0]['blocks'] // packed[0]['comm'][0]['distinct_sms']),
        'gemm_alone_us': concurrency['G']['total_us'],
        'copy_alone_us': concurrency['C']['total_us'],
        'side_by_side_us': concurrency['CG']['total_us'],
        # The copy's own time packed on the GEMM tail's first SMs: first CTA start to last end.
        'copy_packed_us': round(packed[0]['comm'][0]['last_end'] - packed[0]['comm'][0]['first_start'], 1),
        # The copy's own time beside the GEMM (CG: the copy first, one CTA to an SM).
        'copy_beside_gemm_us': round(concurrency['CG']['comm'][0]['last_end'] - concurrency['CG']['comm'][0]['first_start'], 1),
    },
}
(root / 'data' / 'profiles' / 'h200.json').write_text(json.dumps(profile, indent=1) + '\n')


def table(values, indent=8):
    """A braced list of numbers wrapped at 110 columns, continued lines at `indent`."""
    lines, line = [], '{'
    for i, v in enumerate(values):
        item = repr(v) + (', ' if i + 1 < len(values) else '}')
        if len(line) + len(item) > 110 - indent:
            lines.append(line.rstrip())
            line = ''
        line += item
    lines.append(line)
    return ('\n' + ' ' * indent).join(lines)


grouped_text = ',\n'.join('      {%d, %d, %d, %d, %r}' % (g['groups'], g['m'], g['n'], g['k'], g['us']) for g in grouped)
attention_text = ',\n'.join(
    '      {"%s", %d, %s, %s,\n       %s,\n       %s}' % (
        a['backend'], a['head_dim'], table(a['seq']), table(a['heads']), table(a['forward_us'], 8),
        table(a['backward_us'], 8)) for a in attention)
c = profile['concurrency']
header = f'''#pragma once
/// @file
/// The built-in H200 profile (`sim::profile`): {profile['source']}.
/// Generated by scripts/h200_profile.py from data/measured-h200/, the same data as
/// data/profiles/h200.json; do not edit by hand.

#include <memory>

#include <overlap/sim/machine/profile.hpp>

namespace overlap::sim {{

inline std::shared_ptr<const profile> h200_profile() {{
  static const std::shared_ptr<const profile> built = std::make_shared<const profile>(profile{{
      .gpu = "{profile['gpu']}",
      .source = "{profile['source']}",
      .sms = {profile['sms']},
      .memory_bytes_per_us = {profile['memory_bytes_per_us']!r},
      .sustained_flops_per_us = {profile['sustained_flops_per_us']!r},
      .sustained_clock_mhz = {profile['sustained_clock_mhz']!r},
      .launch_us = 0,
      .event_record_us = 0,
      .gemm = {{{table(ms)},
               {table(ns)},
               {table(ks)},
               {table(profile['gemm']['us'], 16)}}},
      .grouped_gemm = {{
{grouped_text}}},
      .attention = {{
{attention_text}}},
      .concurrency = {{{c['copy_ctas']}, {c['copy_ctas_per_sm']}, {c['gemm_alone_us']!r}, {c['copy_alone_us']!r}, {c['side_by_side_us']!r}, {c['copy_packed_us']!r}, {c['copy_beside_gemm_us']!r}}}}});
  return built;
}}

}}  // namespace overlap::sim
'''
(root / 'include' / 'overlap' / 'sim' / 'machine' / 'profiles' / 'h200.hpp').write_text(header)
