# source me: points Beam at the local emulator started on 39713 (bucket b13)
export STORAGE_EMULATOR_HOST=http://127.0.0.1:39713 GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT=false PYTHONPATH=/tmp/h13gcs/site
