set -x
echo "CXX=$CXX CC=$CC"; env | grep -E "^(CXX|CC|LDFLAGS|CFLAGS|CUDA|TORCH|PATH|LD_)" 
cat /opt/gcc/bin/g++ | head -30; ls -la /opt/gcc/bin | head; ls -la /opt/gcc/lib/gcc/x86_64-linux-gnu/13/ | head -30
find / -name 'libstdc++.so*' -not -path '/proc/*' 2>/dev/null
which c++ g++ gcc python; python --version; $CXX --version; /usr/bin/g++ --version
python -c "import torch,sys; print(torch.__version__, torch.version.cuda); print(open('/proc/self/maps').read())" | grep -E "libstdc|^2\." | awk '{print $NF}' | sort -u
cd /tmp; printf '#include <string>\n#include <stdexcept>\nextern "C" int f(int x){ try { throw std::runtime_error("n=" + std::to_string(x)); } catch (const std::exception& e) { return (int)std::string(e.what()).size(); } }\n' > t.cpp
$CXX -shared -fPIC t.cpp -o t.so; readelf -d t.so | grep NEEDED; nm -D --defined-only t.so | grep -c _ZNSt
LIB=$(python -c "import torch; print([l.split()[-1] for l in open('/proc/self/maps') if 'libstdc++' in l][0])")
echo LIB=$LIB; strings $LIB | grep -E "^GLIBCXX_3\.4\.3" 
$CXX -shared -fPIC t.cpp -o t2.so $LIB; echo rc=$?; readelf -d t2.so | grep NEEDED; nm -D --defined-only t2.so | grep -c _ZNSt; nm -D --undefined-only t2.so | grep GLIBCXX | awk '{print $NF}' | sed 's/.*@//' | sort | uniq -c
python -c "import torch, ctypes; print(ctypes.CDLL('/tmp/t2.so').f(7))"
python -c "import torch, ctypes; print(ctypes.CDLL('/tmp/t.so').f(7))"
nvidia-smi --query-gpu=name --format=csv
python -c "import torch.utils.cpp_extension as c; print(c.CUDA_HOME)"; which nvcc ninja; nvcc --version | tail -2
