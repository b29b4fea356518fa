# No interpreter at all: only an installed CUDA 12 site-packages tree (dist-info and ELF files), for
# the static look envcheck does when the live collector cannot run.
FROM scratch
COPY site-packages/ /usr/lib/python3/dist-packages/
