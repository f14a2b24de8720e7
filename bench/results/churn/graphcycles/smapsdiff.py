# SPDX-License-Identifier: BSD-3-Clause
# Anonymous memory per mapping between two /proc/PID/smaps copies: smapsdiff.py A B
import sys,re
def parse(f):
    maps={}; cur=None
    for l in open(f):
        m=re.match(r'^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$',l)
        if m:
            cur=(m.group(1),m.group(4).strip()); maps[cur]={'size':(int(m.group(2),16)-int(m.group(1),16))//1024,'perm':m.group(3),'end':m.group(2)}
        elif cur and l.startswith(('Rss:','Anonymous:')):
            k,v=l.split()[:2]; maps[cur][k[:-1]]=int(v)
    return maps
a=parse(sys.argv[1]); b=parse(sys.argv[2])
ta=sum(v.get('Anonymous',0) for v in a.values()); tb=sum(v.get('Anonymous',0) for v in b.values())
print('anon total',ta,tb,tb-ta)
for k in sorted(set(a)|set(b)):
    x=a.get(k,{}); y=b.get(k,{})
    if x.get('Anonymous',0)!=y.get('Anonymous',0) or x.get('size')!=y.get('size'):
        print(k, x.get('size'),'->',y.get('size'),'anon',x.get('Anonymous'),'->',y.get('Anonymous'), y.get('perm') or x.get('perm'))
